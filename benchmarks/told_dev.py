"""The development phrasing set of the ledger bench (``told.py``): statements the ledger is tuned on.

Written before the extractor and frozen with it (issue 50): changing a template here after tuning would make the
development figures say nothing. ``[[...]]`` marks what must reach the request for the statement to count as
carried (slots in braces are filled by ``told.py``'s value makers); the brackets are removed from the text sent.
Each entry: (kind, placement, template); a correction is (kind, placement, value maker, original, correction), the
original's ``{v}`` the stale value and the correction's ``{v}`` the new one (drawn by the value maker).
Placements: ``user`` (a user turn of its own, or added to one), ``assistant`` (an assistant's commitment),
``tool`` (a line of a tool result the user's question asked for: ``{ask}`` is that question).
"""

from __future__ import annotations

STATEMENTS: dict[str, list[tuple[str, str, str]]] = {
    "en": [
        ("rule", "user", "Never restart [[{svc}]] during business hours."),
        ("rule", "user", "Don't push anything to [[{branch}]] without asking me first."),
        ("rule", "user", "You must run the full test suite before touching [[{svc}]]."),
        ("rule", "assistant", "Understood, I won't deploy [[{svc}]] until you give the go-ahead."),
        ("limit", "user", "The whole migration must not cost more than [[{money}]]."),
        ("limit", "user", "Keep the export under [[{size} GB]]."),
        ("limit", "user", "Each job may run for at most [[{n} minutes]]."),
        ("limit", "user", "We need this finished by [[{date}]]."),
        ("limit", "user", "No more than [[{n} parallel workers]] on [[{svc}]], please."),
        ("fact", "user", "The customer's account id is [[{acct}]]."),
        ("fact", "user", "Our staging database lives at [[{host}]]."),
        ("fact", "user", "The incident write-up is at [[{url}]]."),
        ("fact", "user", "The on-call engineer this week is [[{person}]]."),
        ("fact", "user", "The config file we changed is [[{path}]]."),
        ("fact", "tool", "service: {svc}\nowner: [[{person}]]\nteam: platform"),
        ("goal", "user", "Our goal for today is to move [[{svc}]] to the new cluster."),
        ("goal", "user", "Next step: rotate the credentials of [[{svc}]]."),
        ("goal", "user", "The index rebuild on [[{host}]] is done."),
        ("preference", "user", "When you show shell commands, prefix them with [[{prompt}]]."),
        ("preference", "user", "Please call the service [[{alias}]] in your answers, not its full name."),
        ("preference", "user", "I prefer tables over prose; put [[{field}]] in the first column."),
    ],
    "de": [
        ("rule", "user", "Starte [[{svc}]] niemals während der Geschäftszeiten neu."),
        ("rule", "user", "Bitte keine Änderungen an [[{path}]] ohne Rücksprache."),
        ("limit", "user", "Das Ganze darf höchstens [[{money}]] kosten."),
        ("limit", "user", "Der Export muss bis [[{date}]] fertig sein."),
        ("fact", "user", "Die Kundennummer lautet [[{acct}]]."),
        ("fact", "user", "Unser Staging-Server ist [[{host}]]."),
        ("goal", "user", "Als Nächstes migrieren wir [[{svc}]] auf den neuen Cluster."),
        ("preference", "user", "Antworte bitte in Stichpunkten und nenne den Dienst [[{alias}]]."),
    ],
    "zh": [
        ("rule", "user", "不要在工作时间重启 [[{svc}]]。"),
        ("limit", "user", "预算不能超过 [[{money}]]。"),
        ("limit", "user", "[[{date}]] 之前必须完成。"),
        ("fact", "user", "客户账号是 [[{acct}]]。"),
        ("fact", "user", "负责人是 [[{person}]]。"),
        ("goal", "user", "下一步是把 [[{svc}]] 迁移到新集群。"),
        ("preference", "user", "回答请用表格，第一列放 [[{field}]]。"),
    ],
}

CORRECTIONS: dict[str, list[tuple[str, str, str, str, str]]] = {
    "en": [
        ("fact", "user", "host", "The primary database is [[{v}]].",
         "Actually, the primary database moved to [[{v}]]."),
        ("limit", "user", "money", "The budget for this is [[{v}]].", "Change of plan: the budget is now [[{v}]]."),
        ("limit", "user", "date", "The deadline is [[{v}]].", "The deadline moved to [[{v}]]."),
        ("fact", "user", "person", "The release manager is [[{v}]].", "[[{v}]] is the release manager instead."),
        ("goal", "user", "svc", "Next step: migrate [[{v}]].", "Next step: migrate [[{v}]]."),
    ],
    "de": [
        ("limit", "user", "money", "Das Budget beträgt [[{v}]].", "Korrektur: das Budget ist jetzt [[{v}]]."),
    ],
    "zh": [
        ("limit", "user", "date", "截止日期是 [[{v}]]。", "截止日期改成 [[{v}]] 了。"),
    ],
}
# The question whose answer a ``tool`` placement's lines hold (its slots are the statement's).
ASKS = {"en": "Who owns {svc}? Look it up in the service catalog."}
