"""The closed-class words (negation, modals, bounds, aim and completion, an answer's form, corrections, function
words) the ledger's extractor reads a statement's structure by, in the languages of the counters' bench."""

from __future__ import annotations

import re
from collections.abc import Iterable

DIRECTIVE = (
    # volition: what someone wants or would rather have
    "want", "wants", "would like", "would rather", "prefers", "wish", "möchte", "möchten", "veut", "voudrais",
    "souhaite", "quiere", "quiero", "prefiere", "vuole", "voglio", "preferisce", "quer", "quero", "prefere",
    "хочет", "хочу", "хотим", "предпочитает", "想要", "希望", "たい", "ほしい", "원해", "원합니다", "싶",
    # deontic adjectives and participles: what is allowed, and who must allow it
    "allowed", "permitted", "restricted", "confidential", "off-limits", "off limits", "approval", "approve",
    "authorized", "authorised", "secret", "sensitive", "hands off", "read-only", "under no circumstances",
    # English: negation, modals, the imperative's politeness and its adverbs
    "never", "not", "n't", "no", "nobody", "nothing", "none", "nowhere", "dont", "don't", "do not", "cannot", "can't",
    "cant", "must", "mustn't", "shall", "should", "shouldn't", "need to", "needs to", "have to", "has to", "required",
    "requires", "require", "mandatory", "prohibited", "forbidden", "not allowed", "always", "only", "make sure",
    "ensure", "avoid", "please", "pls", "may not", "won't", "will not", "w/o", "without",
    # German
    "nie", "niemals", "nicht", "kein", "keine", "keinen", "keinem", "keiner", "muss", "müssen", "musst", "soll",
    "sollst", "sollen", "darf", "dürfen", "immer", "nur", "bitte", "verboten", "ohne",
    # French
    "ne", "n'", "jamais", "pas", "aucun", "aucune", "doit", "dois", "devez", "doivent", "il faut", "faut", "interdit",
    "toujours", "seulement", "uniquement", "sans", "svp",
    # Spanish, Italian, Portuguese
    "nunca", "jamás", "debe", "debes", "deben", "hay que", "tiene que", "tienes que", "prohibido", "siempre", "solo",
    "sólo", "sin", "non", "mai", "deve", "devi", "devono", "bisogna", "vietato", "sempre", "senza", "não", "jamais",
    "deves", "devem", "tem que", "proibido", "apenas", "sem", "por favor", "per favore",
    # Russian
    "не", "нельзя", "никогда", "ни", "должен", "должна", "должны", "нужно", "надо", "обязательно", "запрещено",
    "всегда", "только", "без",
    # Chinese, Japanese, Korean (no word edges: matched as written)
    "不要", "别", "不能", "不得", "不可", "不许", "不准", "禁止", "必须", "务必", "一定", "永远", "总是", "始终",
    "只能", "应该", "需要", "请", "勿", "しないで", "ないで", "ません", "てはいけ", "ては駄目", "禁止", "必ず",
    "絶対", "べき", "なければ", "ください", "下さい", "だめ", "ダメ", "마세요", "말고", "안 됩니다", "안 돼",
    "안된다", "안 된다", "금지", "반드시", "꼭", "절대", "해야", "하세요", "주세요", "않",
)
BOUND = (
    "at most", "at least", "no more than", "not more than", "less than", "more than", "fewer than", "under", "below",
    "above", "over", "up to", "max", "maximum", "min", "minimum", "limit", "limited", "cap", "capped", "ceiling",
    "budget", "exceed", "within", "by", "before", "until", "till", "no later than", "deadline", "latest", "quota",
    "due", "≤", "≥", "<=", ">=", "<", ">", "höchstens", "mindestens", "maximal", "bis", "spätestens", "unter",
    "weniger als", "mehr als", "grenze", "frist", "vor", "au plus", "au moins", "plafond", "dépasser", "moins de",
    "plus de", "avant", "d'ici", "au plus tard", "jusqu'à", "limite", "échéance", "como máximo", "máximo", "mínimo",
    "no más de", "menos de", "más de", "superar", "exceder", "antes de", "antes del", "hasta", "límite", "tope",
    "presupuesto", "plazo", "al massimo", "massimo", "massima", "minimo", "non più di", "meno di", "più di", "entro",
    "prima del", "fino a", "scadenza", "no máximo", "não mais de", "mais de", "ultrapassar", "até", "orçamento",
    "prazo", "не больше", "не более", "не меньше", "максимум", "минимум", "до", "не позднее", "меньше", "больше",
    "превышать", "лимит", "бюджет", "срок", "дедлайн", "不超过", "超过", "最多", "至少", "以内", "之内", "以下",
    "以上", "上限", "下限", "之前", "以前", "截止", "预算", "期限", "未満", "超え", "最大", "最小", "まで", "予算",
    "締め切り", "締切", "이하", "이상", "이내", "미만", "초과", "넘", "최대", "최소", "까지", "예산", "마감", "한도",
)
GOAL = (
    "goal", "objective", "aim", "target", "task", "mission", "purpose", "next", "after that", "afterwards", "done",
    "finished", "completed", "complete", "shipped", "merged", "resolved", "status", "milestone", "todo", "to-do",
    "remaining", "we want to", "we're trying to", "trying to", "working on", "ziel", "aufgabe", "als nächstes",
    "nächste", "nächsten", "danach", "erledigt", "fertig", "abgeschlossen", "meilenstein", "objectif", "tâche",
    "prochaine étape", "ensuite", "terminé", "fini", "statut", "étape", "objetivo", "meta", "tarea", "siguiente paso",
    "próximo paso", "terminado", "hecho", "completado", "estado", "obiettivo", "scopo", "compito", "prossimo passo",
    "finito", "fatto", "completato", "tarefa", "próximo passo", "concluído", "feito", "цель", "задача",
    "следующий шаг", "дальше", "готово", "сделано", "завершено", "закончено", "статус", "目标", "任务", "下一步",
    "接下来", "完成", "做完", "搞定", "进度", "状态", "里程碑", "目標", "目的", "タスク", "次は", "次に", "次の",
    "その後", "完了", "終わ", "済み", "ステータス", "목표", "과제", "다음 단계", "다음은", "다음에", "그 다음",
    "완료", "끝났", "상태",
)
FORM = (
    "answer", "answers", "reply", "replies", "respond", "response", "responses", "format", "formatted", "bullet",
    "bullets", "bullet points", "list", "lists", "table", "tables", "column", "columns", "prose", "short", "shorter",
    "brief", "concise", "terse", "verbose", "tone", "style", "markdown", "code block", "emoji", "prefer", "rather",
    "i like", "i'd like", "wording", "in your answers", "when you show", "when you write", "refer to", "call it",
    "antwort", "antworte", "antworten", "stichpunkt", "stichpunkte", "stichpunkten", "liste", "tabelle", "kurz",
    "knapp", "ausführlich", "lieber", "bevorzuge", "nenne", "réponse", "réponses", "réponds", "répondez", "puces",
    "tableau", "court", "bref", "concis", "préfère", "respuesta", "respuestas", "responde", "tabla", "formato",
    "corto", "cortas", "breve", "prefiero", "risposta", "risposte", "rispondi", "elenco", "tabella", "preferisco",
    "resposta", "respostas", "responda", "tabela", "curto", "prefiro", "отвечай", "ответ", "ответы", "списком",
    "список", "таблиц", "формат", "коротко", "кратко", "предпочитаю", "回答", "回复", "答复", "表格", "列表", "格式",
    "简短", "简洁", "详细", "语气", "风格", "偏好", "返答", "箇条書き", "形式", "短く", "簡潔", "詳しく", "丁寧",
    "好み", "답변", "대답", "목록", "형식", "짧게", "간단히", "자세히", "선호",
)
CORRECTION = (
    "actually", "instead", "now", "changed", "change", "moved", "correction", "corrected", "update", "updated",
    "scratch that", "no longer", "revised", "revision", "amendment", "amended", "changed to", "wrong", "mistake",
    "turns out", "bumped", "pushed to", "korrektur", "eigentlich", "stattdessen", "jetzt", "nun", "geändert",
    "verschoben", "doch", "en fait", "plutôt", "désormais", "maintenant", "changé", "modifié", "finalement",
    "en realidad", "ahora", "cambio", "cambiado", "corrección", "pasa a", "in realtà", "invece", "ora", "adesso",
    "cambiato", "correzione", "na verdade", "em vez", "agora", "mudou", "alterado", "correção", "на самом деле",
    "вместо", "теперь", "изменил", "поменял", "перенес", "перенесли", "поправка", "исправление", "改成", "改为",
    "改到", "变成", "换成", "其实", "更正", "修改", "现在", "调整", "推迟", "延期", "訂正", "変更", "変わ", "実は",
    "今は", "代わり", "修正", "정정", "변경", "바뀌", "사실은", "이제", "대신", "수정",
)
# A sentence of the assistant's that binds it: its own future or refusal, or an action held until the user's word.
COMMITMENT = (
    "i will", "i'll", "i won't", "i will not", "i'm not going to", "i am not going to", "i'm going to", "i shall",
    "i'll hold", "i'll wait", "until you", "till you", "unless you", "once you", "before you", "holding", "on hold",
    "ich werde", "je vais", "je ne", "voy a", "no voy", "non farò", "vou", "я буду", "я не", "我会", "我不会", "我将",
    "します", "しません", "하겠습니다", "않겠습니다",
)
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words: what a statement's subject is not (articles, pronouns, prepositions, auxiliaries, conjunctions).
FUNCTION = _words("""
a an the this that these those it its it's is are was were be been being am do does did has have had of to in on at
for from with by as and or but if so than then there here i me my we us our you your he she they them their his her
what which who whom whose when where why how all any each every some such very just also too into onto about over
under after before again further once more most other only own same can could would will shall may might one two new
get got let lets let's via per vs yes ok okay hey hi thanks thank please pls btw fyi re der die das den dem des ein
eine einer einem einen und oder aber ist sind war wird werden wir ihr sie es ich du zu im am an auf aus bei mit von
für über um wie was wer wo ja nein auch noch schon sehr dass le la les un une des du de et ou mais est sont était
nous vous ils elles je tu il elle en au aux pour par sur avec dans que qui quoi ce cette ces se sa son ses leur y el
los las unos unas del al y o pero es son era nosotros ellos ella yo tú en con por para que se su sus lo il lo gli
uno una dei delle e è sono era noi voi loro io che di da con per su nel nella o os as um uma do da dos das e é são
era nós eles ela eu em com por para que se seu sua no na и или но это этот эта эти то как что кто где мы вы они он
она я в во на с со по к от из за для у о об же ли бы
""")


_TOKEN = re.compile(r"[^\W_][\w'’-]*")
_SPACED = re.compile(r"[a-zа-яà-ÿ]")


class Text:
    """A text (lower case) read once for every lexicon: its words, and its words joined by single spaces (for the
    markers of several words)."""

    __slots__ = ("joined", "lower", "words")

    def __init__(self, lower: str) -> None:
        self.lower = lower
        tokens = _TOKEN.findall(lower)
        self.words = frozenset(tokens)
        self.joined = f" {' '.join(tokens)} "


class Lexicon:
    """Markers found by word in spaced scripts (a set lookup, a phrase by its words) and by substring in CJK and
    for symbols ("≤", "n't")."""

    def __init__(self, words: Iterable[str]) -> None:
        unique = set(words)
        spaced = {w for w in unique if _SPACED.match(w) and _TOKEN.fullmatch(w.replace(" ", "x"))}
        self.single = frozenset(w for w in spaced if " " not in w)
        # a phrase by its first word: only those whose first word the text holds are looked for
        self.phrases: dict[str, tuple[str, ...]] = {}
        for phrase in sorted(w for w in spaced if " " in w):
            head = phrase.split()[0]
            self.phrases[head] = (*self.phrases.get(head, ()), f" {phrase} ")
        self.written = tuple(sorted(unique - spaced, key=len, reverse=True))  # CJK, symbols: as written

    def found(self, text: Text) -> bool:
        return (not self.single.isdisjoint(text.words)
                or any(p in text.joined for head in self.phrases.keys() & text.words for p in self.phrases[head])
                or any(w in text.lower for w in self.written))

    def written_in(self, run: str) -> list[str]:
        """The markers written as they are (CJK) that ``run`` holds."""
        return [w for w in self.written if w in run]


DIRECTIVES = Lexicon(DIRECTIVE)
BOUNDS = Lexicon(BOUND)
GOALS = Lexicon(GOAL)
FORMS = Lexicon(FORM)
CORRECTIONS = Lexicon(CORRECTION)
COMMITMENTS = Lexicon(COMMITMENT)
# Words (of the spaced scripts) that say nothing of a statement's subject: the grammatical markers above (the nouns
# of bounds, goals and forms, "budget", "deadline", "answers", are what a statement is about).
MARKERS = frozenset(w for words in (DIRECTIVE, CORRECTION, COMMITMENT) for w in words if " " not in w)
