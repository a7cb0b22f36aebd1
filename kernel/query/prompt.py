"""What a prompt asks: the question inside a pasted file, log, trace or diff.

The prompt hook sends whatever the user typed, and that is rarely one clean question: a pasted
source file, a log or a stack trace with a question before or after it, or no question at all.
Embedded whole, such a prompt is slow (the model reads it window by window) and means nothing in
particular, so its nearest passage is chance; searched by keywords, its identifiers match at
random. :func:`asked` reduces a prompt to what it asks before anything is embedded or searched,
for every caller of recall (the hook, the MCP tool, ``passageway eval``).

The rules, in order (``docs/ranking-and-gate.md``, "Long prompts", has the measurements):

1. **Lines are prose or material.** Fenced blocks (```` ``` ```` or ``~~~``) are material whole.
   Outside them a line is material when it looks like code (keywords that open a statement,
   brackets and semicolons at its end, ``name(`` calls, ``snake_case`` and ``dotted.names``,
   indentation of four spaces or a tab), a log line (a timestamp or a level such as ``ERROR``
   at its start), a stack trace (``Traceback``, ``File "…", line 3``, ``at pkg.Class(File.java:9)``,
   ``SomeError: …``), a diff (``@@``, ``diff --git``, ``+++``/``---`` and the ``+``/``-`` lines of
   such a block), or data (JSON, table rows, ``key: value`` and ``key=value`` lines, paths, long
   tokens). A comment line (``#``, ``//``, ``/*``, ``--``) is material inside material, so a
   question in a code comment belongs to the paste, not to the user. Everything else with at
   least one word of letters is prose. A line that asks (a question mark at its end, or a
   question or request word at its start) in at least :data:`ASKING_WORDS` plain words is prose
   whatever code it quotes (``How do I pass --reload to uv run?``), unless it is a log or trace line.
2. **A prompt of one paragraph of prose**, up to :data:`PLAIN_CHARS` characters, is the question
   as it stands (a search such as "black death algiers" asks without a question mark).
3. **Otherwise the prose is cut into sentences and the questions are kept**: a sentence that ends
   with a question mark or opens with a question or request word of English or German ("how",
   "explain", "wie", "erkläre", …). A question with fewer than :data:`MIN_CONTENT_WORDS` content
   words of its own ("Any idea why?", "How do I hide it?") takes the prose sentence before it as
   well.
4. **Nothing asked, nothing searched**: a prompt without such a sentence (a paste alone, a long
   text that asks nothing) reduces to ``""``, and recall answers silence without embedding it.
5. **The paste's names as evidence**: when a question was cut out of pasted material, the names
   in that material (exception names, ``--flags``, module and package names, settings keys;
   :func:`paste_terms`) go with it as ``terms``, at most :data:`MAX_TERMS`: recall adds them to
   the keyword search, so "What's going on?" under a traceback still finds the page about its
   error. They never make a question of a paste that asks nothing (rule 4).
6. **The model's own limit**: what is kept is cut to the embedder's input limit in its tokens
   (:func:`fit_to_tokens`), sentence by sentence, so a prompt never costs more than one window.

The rules are plain on purpose: a newcomer can predict what they keep, and they run in a few
milliseconds on the hook's 20,000 characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from passageway.kernel.embedder import MAX_TOKENS
from passageway.kernel.query.stopwords import content_words

PLAIN_CHARS = 1_000
"""A prompt of one paragraph of prose and at most this long is taken whole: one or a few sentences
a user typed. A longer one, or several paragraphs (a pasted email, an article), is reduced to its
questions like any other."""

MIN_CONTENT_WORDS = 3
"""A question with fewer content words than this ("Any idea why?", "How do I hide it?") borrows
the sentence before it in its paragraph, which says what "it" is. 1 before issue 27: the questions
inside pastes of the public documentation set mostly lean on the sentence before them; a bare
question of the XQuAD sets still reduces to itself (tests/test_prompt.py)."""

ASKING_WORDS = 3
"""Plain words (outside inline code) that a line which asks needs to be prose whatever it quotes."""

MAX_TERMS = 8
"""The most names of a paste that go with its question into the keyword search."""

_FENCE = re.compile(r"^\s*(```|~~~)")
_TRACE = re.compile(
    r"^\s*(Traceback \(most recent call last\)|Exception in thread |\S*(Exception|Error)\b"
    r"|File \".*\", line \d+|at [\w$.<>/]+\(.*\)"
    r"|at .+:\d+(:\d+)?\)?$|Caused by: |\.\.\. \d+ more|goroutine \d+ \[|panic: |thread '.+' panicked"
    r"|\^+$|[\w.]*(Error|Exception|Warning|Interrupt|Exit)(\[\w+\])?(: |:?$))"
)
_LOG = re.compile(
    r"^\s*(\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}|\[?\d{1,2}:\d{2}:\d{2}|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}"
    r"|\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE)\]?[:\s]"
    r"|\d{1,3}(\.\d{1,3}){3} \S+ \S+ \[|[EWIDF]\d{4} \d{2}:)"
)
_DIFF_HEAD = re.compile(r"^(diff --git |index [0-9a-f]+\.\.|@@ |\+\+\+ |--- [ab/])")
_DIFF_LINE = re.compile(r"^[+\- ]")
_DIFF_CHANGE = re.compile(r"^[+-](?![+-])")
_DIFF_INDENTED = re.compile(r"^[+-]( {2,}|\t)")
_CODE_START = re.compile(
    r"^\s*(def |class |import |from [\w.]+ import |return\b|if .*:$|elif |else:|for .* in .*:$|while .*:$"
    r"|try:|except\b|finally:|with .*:$|raise |yield |async |await |lambda |assert |pass$|break$"
    r"|continue$|const |let |var |function\b|export |module\.|require\(|public |private |protected "
    r"|static |final |void |int |fn |pub |impl |struct |enum |match |use [\w:]+|package |func |type \w+ "
    r"|#include|#define|#!|using |namespace |template<|SELECT |INSERT |UPDATE \w+ SET|CREATE |DROP "
    r"|\$ |>>> |\.\.\. |PS> |sudo |pip |npm |uv |git |cd |ls |curl |docker |kubectl |echo )"
)
_CODE_END = re.compile(r"([{};]|\)\s*:|=>|->|\(\)|\[\]|,)\s*$")
_CALL = re.compile(r"[\w\]\)]\(|\w\.\w+\(|\w\[\w")
_IDENT = re.compile(r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z][a-zA-Z]+\b|\b\w+\.\w+\.\w+\b|\w::\w|\$\w+")
_DATA = re.compile(
    r"^\s*([{\[\]}],?$|\"[^\"]*\"\s*:|\|.*\|\s*$|[\w.-]+\s*[:=]\s*\S+$|[\w.-]+:\s*$|(\S*/){2,}\S*$"
    r"|[0-9a-f]{7,}\b|- [\w.-]+:)"
)
_COMMENT = re.compile(r"^\s*(#|//|/\*|\*/?|--|;;|<!--|%)")
_SYMBOLS = re.compile(r"[{}\[\]()<>=;|&*/\\$@^~`+]")
_LETTER_WORD = re.compile(r"[^\W\d_]{2,}")
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_INDENT = re.compile(r"^(    |\t)")
_LIST_ITEM = re.compile(r"^\s*([-*•]|\d+[.)])\s+")
_SENTENCE_GAP = re.compile(r"[.!?…？！][\"')\]»“”]*\s+|:\s+(?=[A-ZÄÖÜ])")
_ABBREVIATIONS = frozenset(
    ("mr", "mrs", "ms", "dr", "st", "vs", "ca", "nr", "bzw", "chr", "etc", "usw", "prof", "jr", "sr", "no",
     "vgl", "ggf")
)
_HEADING = re.compile(r"^#{1,6} [^\s#]")

def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


INTERROGATIVES = _word_set(
    """
    what which who whom whose when where why how is are was were do does did can could should would
    will shall may might has have had whats what's who's how's where's
    was welche welcher welches welchen wer wem wen wessen wann wo woher wohin warum wieso weshalb
    wozu wie ist sind war waren wird werden kann konnen können gibt gab hat haben hatte darf soll
    sollte
    """
)
"""Words that open a question in English or German (lower-cased): a sentence they open is a
question unless it ends with a full stop or a colon ("When I run it, it fails.")."""

REQUESTS = _word_set(
    """
    tell explain describe show list find give name summarize summarise compare define
    erklare erkläre erklär erklar beschreibe zeige zeig nenne liste finde gib fasse vergleiche
    nennen erklären erklaren beschreiben zeigen geben finden vergleichen
    """
)
"""Words that open a request ("Explain the Black Death."), whatever its last character."""


@attrs.frozen
class Asked:
    """What a prompt asks: ``text`` to embed and search (``""``: nothing), and ``why``.

    ``why`` is ``"plain"`` (prose only, taken whole), ``"questions"`` (the question sentences of
    a longer or mixed prompt) or ``"nothing asked"``; eval reports and tests read it.
    """

    text: str
    why: str
    terms: tuple[str, ...] = ()
    """Names from the pasted material around the question (rule 5), for the keyword search."""

    @property
    def silent(self) -> bool:
        return not self.text


def asked(prompt: str) -> Asked:
    """The question(s) inside ``prompt``; see the module docstring for the rules."""
    text = prompt.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return Asked("", "nothing asked")
    kinds = line_kinds(text.split("\n"))
    lines = text.split("\n")
    if "material" not in kinds and "blank" not in kinds and len(text) <= PLAIN_CHARS:
        return Asked(text, "plain")
    sentences = _prose_sentences(lines, kinds)
    kept = _questions(sentences)
    if not kept:
        return Asked("", "nothing asked")
    material = [line for line, kind in zip(lines, kinds, strict=True) if kind == "material"]
    question = " ".join(kept)
    return Asked(question, "questions", paste_terms(material, question))


def line_kinds(lines: list[str]) -> list[str]:
    """``"prose"``, ``"material"`` or ``"blank"`` for each line (rule 1 of the module docstring)."""
    kinds = ["blank" if not line.strip() else "" for line in lines]
    fenced = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            kinds[number] = "material"
            fenced = not fenced
        elif fenced and kinds[number] != "blank":
            kinds[number] = "material"
    for start, end in _blocks(kinds):
        in_diff = _is_diff(lines[start:end])
        for number in range(start, end):
            if kinds[number]:
                continue
            line = lines[number]
            if in_diff and _DIFF_LINE.match(line):
                kinds[number] = "material"
            elif _COMMENT.match(line) and not _LIST_ITEM.match(line):
                kinds[number] = "comment"
            elif _asks(line):
                kinds[number] = "prose"
            else:
                kinds[number] = "material" if _is_material(line) else "prose"
    _settle_comments(lines, kinds)
    return kinds


def _blocks(kinds: list[str]) -> list[tuple[int, int]]:
    """Runs of non-blank lines, as ``(start, end)`` index pairs."""
    blocks, start = [], None
    for number, kind in enumerate([*kinds, "blank"]):
        if kind == "blank":
            if start is not None:
                blocks.append((start, number))
            start = None
        elif start is None:
            start = number
    return blocks


def _is_diff(block: list[str]) -> bool:
    """A diff: a header line (``@@``, ``diff --git``, ``+++``), or added and removed lines both,
    three or more, or a changed line indented as code (a list item has one space after ``-``)."""
    if any(_DIFF_HEAD.match(line) for line in block):
        return True
    if any(_DIFF_INDENTED.match(line) for line in block):
        return True
    changes = [line[0] for line in block if _DIFF_CHANGE.match(line)]
    return len(changes) >= 3 and "+" in changes and "-" in changes


def _is_material(line: str) -> bool:
    """Whether one line outside a fence looks like code, a log, a trace or data."""
    if _TRACE.match(line) or _LOG.match(line) or _CODE_START.match(line) or _DATA.match(line):
        return True
    if _INDENT.match(line) and not _LIST_ITEM.match(line):
        return True
    bare = _LIST_ITEM.sub("", _INLINE_CODE.sub(" code ", line)).strip()
    letter_words = _LETTER_WORD.findall(bare)
    tokens = bare.split()
    if not letter_words or not tokens:
        return True
    if _CODE_END.search(bare) and (len(letter_words) < 8 or _CALL.search(bare)):
        return True
    symbols = len(_SYMBOLS.findall(bare))
    odd = len(_IDENT.findall(bare)) + len(_CALL.findall(bare))
    plain = sum(1 for token in tokens if _PLAIN_WORD.fullmatch(token.strip(".,;:!?\"'()«»„“”")))
    return symbols > 0.06 * len(bare) + 1 or odd >= 2 or plain < 0.6 * len(tokens)


def _asks(line: str) -> bool:
    """A line that asks in words while quoting code: "How do I pass --reload to uv run?"."""
    if _TRACE.match(line) or _LOG.match(line) or _INDENT.match(line):
        return False
    if not is_question_sentence(_INLINE_CODE.sub("code", line.strip())):
        return False
    bare = _INLINE_CODE.sub(" ", line)
    plain = [token for token in bare.split() if _PLAIN_WORD.fullmatch(token.strip(".,;:!?\"'()«»„“”"))]
    return len(plain) >= ASKING_WORDS and len(plain) >= 0.5 * len(bare.split())


_EXCEPTION = re.compile(r"\b(?:[a-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt))\b")
_FLAG = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]+)")
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+([\w, ]+)|import\s+([\w., ]+))")
_PACKAGE_PATH = re.compile(r"(?:site-packages|dist-packages|node_modules)/([\w.-]+)/")
_CAMEL = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+)\b")
_API = re.compile(r"(?<![\w./])([a-z_]\w*\.[A-Za-z_]\w*)\(")
_KEYWORD_ARGUMENT = re.compile(r"[(,]\s*([a-z]\w*_\w+)\s*=(?!=)")
_TABLE = re.compile(r"^\s*\[\[?([\w.-]+)\]\]?\s*$")
_SETTING = re.compile(r"^\s*\"?([A-Za-z][\w.-]*[_.-][\w.-]*)\"?\s*[:=]")
GENERIC_NAMES = frozenset(("exception", "error", "warning", "traceback", "valueerror", "typeerror",
                           "runtimeerror", "keyerror", "oserror"))
"""Names too common to be evidence: they are in every paste and in no page about one thing."""


def paste_terms(material: list[str], question: str = "") -> tuple[str, ...]:
    """The names in pasted ``material`` lines that are evidence for the question asked about it
    (rule 5): exception names, ``--flags``, imported modules and the packages a trace runs
    through, class and function names (``TestClient``, ``typer.Option(``), settings keys
    (``allow_origins = …``, ``DATABASE_URL=…``, ``[directory]``, ``hide_input=…``), in that order,
    each once, none already in ``question``, at most :data:`MAX_TERMS`."""
    found: dict[str, list[str]] = {"exception": [], "flag": [], "module": [], "name": [], "setting": []}
    for line in material:
        found["exception"] += _EXCEPTION.findall(line)
        found["flag"] += _FLAG.findall(line)
        found["name"] += _CAMEL.findall(line) + _API.findall(line)
        found["setting"] += _KEYWORD_ARGUMENT.findall(line) + _TABLE.findall(line)
        imported = _IMPORT.match(line)
        if imported:
            names = " ".join(part for part in imported.groups() if part)
            found["module"] += [name for name in re.split(r"[\s,]+", names) if name]
        found["module"] += _PACKAGE_PATH.findall(line)
        setting = _SETTING.match(line)
        if setting and not _CODE_START.match(line) and not _TRACE.match(line):
            found["setting"].append(setting.group(1))
    asked_words = {word.casefold() for word in re.findall(r"[\w.-]+", question)}
    terms: dict[str, None] = {}
    for kind in ("exception", "flag", "module", "name", "setting"):
        for name in found[kind]:
            folded = name.casefold()
            if folded in GENERIC_NAMES or folded in asked_words or len(name) < 3:
                continue
            terms.setdefault(name, None)
    return tuple(terms)[:MAX_TERMS]


def _settle_comments(lines: list[str], kinds: list[str]) -> None:
    """A comment line is material, unless it reads as a Markdown heading (``# Short title``)
    and the nearest other lines of its block are not material."""
    for number, kind in enumerate(kinds):
        if kind != "comment":
            continue
        line = lines[number].strip()
        heading = (bool(_HEADING.match(line)) and len(line.split()) <= 11
                   and not line.endswith((".", ",", ";")))
        neighbour = "prose" if heading else "material"
        for step in (-1, 1):
            other = number + step
            while 0 <= other < len(kinds) and kinds[other] == "comment":
                other += step
            if 0 <= other < len(kinds) and kinds[other] == "material":
                neighbour = "material"
        kinds[number] = neighbour


def _prose_sentences(lines: list[str], kinds: list[str]) -> list[list[str]]:
    """The prose, as paragraphs (runs of prose lines) cut into sentences."""
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for line, kind in [*zip(lines, kinds, strict=True), ("", "blank")]:
        if kind == "prose":
            if _LIST_ITEM.match(line) and current:
                paragraphs.append(current)  # each list item is a sentence of its own
                current = []
            current.append(line.strip())
        elif current:
            paragraphs.append(current)
            current = []
    return [
        sentences(" ".join(paragraph)) for paragraph in paragraphs
    ]


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences: after ``.``, ``!``, ``?`` and a space when no small letter
    follows, but not after one letter ("y. pestis", "H. Garrison"), a number of one or two digits
    (German ordinals, "am 12. Mai") or a common abbreviation ("Mr.", "bzw."); and after a colon
    that a capital follows ("Here is the log: What …")."""
    pieces, start = [], 0
    for gap in _SENTENCE_GAP.finditer(text):
        following = text[gap.end() : gap.end() + 1]
        if following.islower():
            continue
        if text[gap.start()] == ".":
            before = text[: gap.start()].split()
            word = before[-1].lstrip("(\"'„“«") if before else ""
            if len(word) == 1 or (word.isdigit() and len(word) <= 2) or word.lower() in _ABBREVIATIONS:
                continue
            if "." in word and len(word) <= 5:  # "U.S.", "z.B."
                continue
        pieces.append(text[start : gap.start() + 1].strip())
        start = gap.end()
    pieces.append(text[start:].strip())
    return [piece for piece in pieces if piece]


def is_question_sentence(sentence: str) -> bool:
    """A question mark at the end, a request word at the start, or a question word at the start
    of a sentence that does not end as a statement (English and German)."""
    stripped = sentence.rstrip(" \"')]»“”")
    if stripped.endswith(("?", "？")):
        return True
    first = _LETTER_WORD.search(_LIST_ITEM.sub("", sentence, count=1))
    if not first or first.start() > 2:
        return False
    word = first.group(0).lower()
    return word in REQUESTS or (word in INTERROGATIVES and not stripped.endswith((".", ":", "!")))


def _questions(paragraphs: list[list[str]]) -> list[str]:
    """The question sentences, each with the sentence before it when it has too few words."""
    kept: list[str] = []
    for sentences in paragraphs:
        for number, sentence in enumerate(sentences):
            if not is_question_sentence(sentence):
                continue
            if number and len(content_words(sentence)) < MIN_CONTENT_WORDS:
                before = sentences[number - 1]
                if before not in kept:
                    kept.append(before)
            if sentence not in kept:
                kept.append(sentence)
    return kept


def fit_to_tokens(text: str, count: Callable[[str], int], limit: int = MAX_TOKENS) -> str:
    """``text`` cut to at most ``limit`` tokens by ``count``: whole sentences while they fit, then
    the first sentence cut at a word (rule 5). ``count`` is the embedder's token count."""
    if count(text) <= limit:
        return text
    kept = ""
    for sentence in sentences(text):
        longer = f"{kept} {sentence}".strip()
        if count(longer) > limit:
            break
        kept = longer
    if kept:
        return kept
    words = text.split()
    low, high = 0, len(words)  # the most words of the first sentence that fit
    while low < high:
        middle = (low + high + 1) // 2
        if count(" ".join(words[:middle])) <= limit:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low])
