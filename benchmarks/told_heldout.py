"""The held-out phrasing sets of the ledger bench (``told.py``): evaluated once, at the end, never tuned on.

Written before the extractor, each set in the voice of another author: terse ops chat, formal specification
language, pasted tickets, non-native English, code-switching between languages, and French, Spanish, Italian,
Portuguese, Japanese, Korean and Russian speakers. Same format as ``told_dev.py``.
"""

from __future__ import annotations

STATEMENTS: dict[str, list[tuple[str, str, str]]] = {
    "ops": [
        ("rule", "user", "pls no restarts on [[{svc}]] 9-5, customers scream"),
        ("rule", "user", "[[{svc}]] is hands off. nobody touches it w/o CAB approval"),
        ("rule", "user", "dont ever drop tables on [[{host}]]"),
        ("rule", "assistant", "ack, holding all writes to [[{host}]] till you say go"),
        ("limit", "user", "budget hard cap [[{money}]], not a cent more"),
        ("limit", "user", "disk quota for [[{svc}]]: [[{size}G]] max"),
        ("limit", "user", "need it live by [[{date}]] latest"),
        ("limit", "user", "[[{n} pods]] tops for the canary"),
        ("fact", "user", "acct is [[{acct}]] btw"),
        ("fact", "user", "primary = [[{host}]], replica we dont care about"),
        ("fact", "user", "runbook -> [[{url}]]"),
        ("fact", "user", "oncall today: [[{person}]]"),
        ("fact", "tool", "{svc}\towner=[[{person}]]\ttier=2"),
        ("goal", "user", "end goal: [[{svc}]] off the old cluster"),
        ("goal", "user", "next up: bump [[{svc}]] to [[{version}]]"),
        ("goal", "user", "[[{svc}]] cutover done ✅"),
        ("preference", "user", "keep it short, bullets only, tag each with [[{tag}]]"),
        ("preference", "user", "cmds in one code block pls, prompt [[{prompt}]]"),
    ],
    "spec": [
        ("rule", "user", "The agent SHALL NOT modify [[{path}]] under any circumstances."),
        ("rule", "user", "All changes to [[{svc}]] are subject to review by a second engineer prior to deployment."),
        ("rule", "user", "Disabling authentication on [[{host}]] is prohibited."),
        ("limit", "user", "Total expenditure is limited to [[{money}]]."),
        ("limit", "user", "The p99 latency of [[{svc}]] shall not exceed [[{n} ms]]."),
        ("limit", "user", "Delivery is required no later than [[{date}]]."),
        ("fact", "user", "The system of record is identified as [[{acct}]]."),
        ("fact", "user", "Reference documentation is available at [[{url}]]."),
        ("fact", "user", "The designated owner of the component is [[{person}]]."),
        ("goal", "user", "Objective: decommission [[{svc}]] without data loss."),
        ("goal", "user", "Following the audit, the subsequent task is a review of [[{path}]]."),
        ("goal", "user", "Milestone 1 (schema freeze of [[{svc}]]) has been completed."),
        ("preference", "user", "Responses shall be formatted as numbered lists, each item referencing [[{field}]]."),
        ("preference", "user", "All timestamps in deliverables are to be expressed in [[{tz}]]."),
    ],
    "ticket": [
        ("rule", "user", "[{ticket}] Constraint: do NOT run migrations against [[{host}]] during peak.\n"
                         "Priority: P2"),
        ("limit", "user", "Ticket {ticket}\nSummary: nightly export too large\n"
                          "Acceptance: export size <= [[{size} GB]]"),
        ("limit", "user", "{ticket} | Due: [[{date}]] | Assignee: me"),
        ("limit", "user", "Ticket {ticket}\nBudget: [[{money}]] (approved, hard limit)"),
        ("fact", "user", "{ticket}\nCustomer account: [[{acct}]]\nEnvironment: prod"),
        ("fact", "user", "Ticket {ticket} — affected host: [[{host}]]"),
        ("goal", "user", "Ticket {ticket}\nGoal: retire [[{svc}]]\nStatus: in progress"),
        ("goal", "user", "{ticket} status update: [[{svc}]] backfill — DONE"),
        ("preference", "user", "Ticket {ticket}\nReporting format: weekly table with [[{field}]] as first column"),
    ],
    "nonnative": [
        ("rule", "user", "Please you not restart the [[{svc}]] in the working hours, is very dangerous."),
        ("rule", "user", "Is forbidden to make push in [[{branch}]] without my okay."),
        ("limit", "user", "The cost cannot to be more of [[{money}]] in total."),
        ("limit", "user", "Maximum [[{size} GB]] for the export file, more is not possible."),
        ("limit", "user", "Until [[{date}]] it must be ready."),
        ("fact", "user", "The number of account of customer is [[{acct}]]."),
        ("fact", "user", "Database of staging it is on [[{host}]]."),
        ("fact", "user", "My colleague [[{person}]] is the responsible for this."),
        ("goal", "user", "What we want finally is to move [[{svc}]] on new cluster."),
        ("goal", "user", "After this we go to update [[{svc}]] on version [[{version}]]."),
        ("preference", "user", "Answers please more short, with list of points, and write [[{tag}]] on the end."),
    ],
    "mixed": [
        ("rule", "user", "не перезапускай [[{svc}]] в рабочее время, please"),
        ("limit", "user", "deadline 是 [[{date}]]，别晚了"),
        ("limit", "user", "budget ist maximal [[{money}]], okay?"),
        ("fact", "user", "the account id, 就是 [[{acct}]]"),
        ("goal", "user", "next step: [[{svc}]] を新しいクラスタへ移行する"),
        ("preference", "user", "réponses en français svp, avec [[{field}]] en premier"),
    ],
    "fr": [
        ("rule", "user", "Ne redémarre jamais [[{svc}]] pendant les heures de bureau."),
        ("limit", "user", "Le coût total ne doit pas dépasser [[{money}]]."),
        ("limit", "user", "Il faut livrer avant le [[{date}]]."),
        ("fact", "user", "L'identifiant du compte client est [[{acct}]]."),
        ("goal", "user", "Prochaine étape : migrer [[{svc}]] vers le nouveau cluster."),
        ("preference", "user", "Réponds en listes à puces, avec [[{field}]] en tête."),
    ],
    "es": [
        ("rule", "user", "No reinicies nunca [[{svc}]] en horario laboral."),
        ("limit", "user", "El gasto no puede superar [[{money}]]."),
        ("fact", "user", "La cuenta del cliente es [[{acct}]]."),
        ("goal", "user", "El siguiente paso es actualizar [[{svc}]] a [[{version}]]."),
        ("preference", "user", "Prefiero respuestas cortas; pon [[{field}]] primero."),
    ],
    "it": [
        ("rule", "user", "Non toccare mai [[{path}]] senza il mio permesso."),
        ("limit", "user", "La spesa massima è [[{money}]]."),
        ("fact", "user", "Il referente è [[{person}]]."),
    ],
    "pt": [
        ("rule", "user", "Nunca apague os dados de [[{host}]]."),
        ("limit", "user", "O prazo final é [[{date}]]."),
        ("goal", "user", "Nosso objetivo é desligar [[{svc}]] até o fim do mês."),
    ],
    "ja": [
        ("rule", "user", "営業時間中は [[{svc}]] を再起動しないでください。"),
        ("limit", "user", "費用は [[{money}]] 以内に収めてください。"),
        ("fact", "user", "顧客のアカウントIDは [[{acct}]] です。"),
        ("goal", "user", "次は [[{svc}]] を新しいクラスタに移します。"),
        ("preference", "user", "回答は箇条書きで、最初に [[{field}]] を書いてください。"),
    ],
    "ko": [
        ("rule", "user", "업무 시간에는 [[{svc}]]를 절대 재시작하지 마세요."),
        ("limit", "user", "비용은 [[{money}]]을 넘으면 안 됩니다."),
        ("fact", "user", "고객 계정 ID는 [[{acct}]]입니다."),
        ("goal", "user", "다음 단계는 [[{svc}]]를 새 클러스터로 옮기는 것입니다."),
        ("preference", "user", "답변은 짧게 목록으로 해 주세요. 맨 앞에 [[{field}]]를 써 주세요."),
    ],
    "ru": [
        ("rule", "user", "Никогда не перезапускай [[{svc}]] в рабочее время."),
        ("limit", "user", "Бюджет — не больше [[{money}]]."),
        ("fact", "user", "Номер счёта клиента: [[{acct}]]."),
        ("goal", "user", "Следующий шаг — обновить [[{svc}]] до [[{version}]]."),
        ("preference", "user", "Отвечай коротко, списком, и в начале указывай [[{field}]]."),
    ],
}

CORRECTIONS: dict[str, list[tuple[str, str, str, str, str]]] = {
    "ops": [
        ("fact", "user", "host", "primary is [[{v}]]", "scratch that, primary is [[{v}]] now"),
        ("limit", "user", "money", "cap is [[{v}]]", "finance bumped the cap to [[{v}]]"),
        ("limit", "user", "date", "freeze starts [[{v}]]", "freeze pushed to [[{v}]]"),
    ],
    "spec": [
        ("fact", "user", "host", "The designated database host is [[{v}]].",
         "Amendment: the designated database host is hereby changed to [[{v}]]."),
        ("limit", "user", "money", "The approved budget amounts to [[{v}]].",
         "Per revision B, the approved budget is [[{v}]]."),
    ],
    "ticket": [
        ("limit", "user", "date", "{ticket} | Due: [[{v}]]", "{ticket} | Due date updated: [[{v}]]"),
    ],
    "nonnative": [
        ("fact", "user", "host", "The host is [[{v}]].", "Sorry I was wrong, the host is [[{v}]], not the other one."),
        ("fact", "user", "person", "The contact person is [[{v}]].", "Now the contact person is [[{v}]]."),
    ],
    "mixed": [
        ("limit", "user", "money", "budget: [[{v}]]", "budget 改成 [[{v}]] 了"),
    ],
    "fr": [
        ("fact", "user", "host", "Le serveur principal est [[{v}]].",
         "En fait, le serveur principal est désormais [[{v}]]."),
    ],
    "es": [
        ("limit", "user", "date", "La fecha límite es el [[{v}]].", "Cambio: la fecha límite pasa al [[{v}]]."),
    ],
    "ja": [
        ("fact", "user", "person", "担当者は [[{v}]] です。", "訂正です。担当者は [[{v}]] に変わりました。"),
    ],
    "ru": [
        ("fact", "user", "host", "Основной хост — [[{v}]].", "Поправка: основной хост теперь [[{v}]]."),
    ],
}
ASKS = {"ops": "who owns {svc}? check the catalog"}
