"""Prose or material: which lines of a prompt the user wrote, and which they pasted.

The first step of the prompt reducer (:mod:`passageway.kernel.query.prompt`, rule 1): each line
is ``"prose"``, ``"material"`` (code, a log, a stack trace, a diff, data) or ``"blank"``. Only
prose can hold the question; the material is where the paste's names come from
(:mod:`passageway.kernel.query.prompt_names`). The tests are plain regular expressions and counts,
so that a newcomer can predict them and 20,000 characters are read in a few milliseconds.
"""

from __future__ import annotations

import re

from passageway.kernel.query.prompt_sentences import LETTER_WORD, LIST_ITEM, is_question_sentence
from passageway.kernel.text.fences import FENCE_RUN

ASKING_WORDS = 3
"""Plain words (outside inline code) that a line which asks needs to be prose whatever it quotes."""

_FENCE = re.compile(r"^\s*" + FENCE_RUN)  # a prompt is not a document: any indentation
TRACE = re.compile(
    r"^\s*(Traceback \(most recent call last\)|Exception in thread "
    r"|\S*(Exception|Error)(\s*$|\s*[:(\[]|\s{2,}|\b[^:]*:(\s|$))"
    r"|File \".*\", line \d+|at [\w$.<>/]+\(.*\)"
    r"|at .+:\d+(:\d+)?\)?$|Caused by: |\.\.\. \d+ more|goroutine \d+ \[|panic: |thread '.+' panicked"
    r"|\^+$|[\w.]*(Error|Exception|Warning|Interrupt|Exit)(\[\w+\])?(: |:?$)|E {2,}\S)"
)
"""A line of a stack trace (Python, Java, JavaScript, Go, Rust), an exception's own line, or
pytest's ``E   `` line of a failure. A line led by an ``…Error`` or ``…Exception`` word is one
when the word stands alone, before a colon, a bracket or a column gap, or when a colon follows
later (``Error response from daemon: …``); "Error messages are confusing, why?" is prose."""
DIAGNOSTIC = re.compile(
    r"^\s*((error|warning)\[[\w-]+\]:|(error|fatal):\s"
    r"|[\w./\\-]+\.[A-Za-z]\w{0,5}(:\d+){1,2}(:|\s+-)\s|[\w./\\-]+\.[A-Za-z]\w{0,5}\(\d+,\d+\):\s"
    r"|[\w./\\-]+\.[A-Za-z]\w{0,5}: In (function|member function|constructor|destructor|instantiation)\b"
    r"|-->\s*\S+:\d+|\d*\s*\|(\s|$)|= (note|help):|Found \d+ (errors?|warnings?|problems?)\b"
    r"|\d+:\d+\s+(error|warning)\s|[×✖✗✘]\s|[╰├└│]─)"
)
"""A line of a compiler's or checker's report: rustc and cargo (``error[E0382]: …``, ``error: …``,
the `` --> src/main.rs:4:20`` arrow, the numbered ``|`` gutter of the source shown, ``= note:``),
gcc and clang (``main.c:5:3: error: …``, ``main.c: In function 'main':``), mypy and ruff
(``app/main.py:10: error: …``), eslint (``3:7  error  …`` under its file name), TypeScript
(``src/app.ts(12,7): error TS2322: …``), a checker's ``Found 3 errors`` summary, a headline
marked ``×`` or ``✖``, and a resolver's tree of reasons (``╰─▶ Because …``). Their messages are
words ("borrow of moved value", "value moved here"), so they were read as the user's prose and
searched as the question. A lowercase ``warning:``, ``note:`` or ``help:`` line is one only beside
other material (``_settle_settings``): "note: the proxy sets it" alone is prose."""
_LOG = re.compile(
    r"^\s*(\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}|\[?\d{1,2}:\d{2}:\d{2}|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}"
    r"|\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE)\]?[:\s]"
    r"|\d{1,3}(\.\d{1,3}){3} \S+ \S+ \[|[EWIDF]\d{4} \d{2}:)"
)
_DIFF_HEAD = re.compile(r"^(diff --git |index [0-9a-f]+\.\.|@@ |\+\+\+ |--- [ab/])")
_DIFF_LINE = re.compile(r"^[+\- ]")
_DIFF_CHANGE = re.compile(r"^[+-](?![+-])")
_DIFF_INDENTED = re.compile(r"^[+-]( {2,}|\t)")
CODE_START = re.compile(
    r"^\s*(def |class |import |from [\w.]+ import |return\b|if .*:$|elif |else:|for .* in .*:$|while .*:$"
    r"|try:|except\b|finally:|with .*:$|raise |yield |async |await |lambda |assert |pass$|break$"
    r"|continue$|const |let |var |function\b|export |module\.|require\(|public |private |protected "
    r"|static |final |void |int |fn |pub |impl |struct |enum |match |use [\w:]+|package |func |type \w+ "
    r"|#include|#define|#!|using |namespace |template<|SELECT |INSERT |UPDATE \w+ SET|CREATE |DROP "
    r"|\$ |>>> |\.\.\. |PS> |sudo |pip |npm |uv |git |cd |ls |curl |docker |kubectl |echo "
    r"|(end|fi|esac|endif|endfor|endwhile|endfunction);?\s*$)"
)
"""A line that opens a statement of some language, a shell command, or the word alone that closes
a block (``end`` in fish, Ruby and Lua, ``fi`` and ``esac`` in a shell script)."""
_CODE_END = re.compile(r"([{};]|\)\s*:|=>|->|\(\)|\[\]|,)\s*$")
_CALL = re.compile(r"[\w\]\)]\(|\w\.\w+\(|\w\[\w")
_IDENT = re.compile(r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z][a-zA-Z]+\b|\b\w+\.\w+\.\w+\b|\w::\w|\$\w+")
_DATA = re.compile(
    r"^\s*([{\[\]}],?$|\"[^\"]*\"\s*:|\|.*\|\s*$|[\w.-]+\s*[:=]\s*\S+$|[\w.-]+:\s*$|(\S*/){2,}\S*$"
    r"|[0-9a-f]{7,}\b|- [\w.-]+:|[\w.-]+\s*=\s*\S|[\w.-]+:\s*(\"[^\"]*\"|'[^']*')\s*,?$"
    r"|[A-Z][A-Za-z]*(-[A-Z][A-Za-z]*)+: \S|HTTP/\d(\.\d)? \d{3}\b)"
)
"""A line of data: JSON, a table row, a setting (``key = "any value"``, ``key: value``), a path, a
hash, an HTTP header (``Content-Type: text/html``) or status line (``HTTP/1.1 200 OK``)."""
_SETTING_WORDS = re.compile(r"^\s*(- )?([a-z][a-z0-9]*(_[a-z0-9]+)+|[a-z]+[A-Z]\w*):\s+\S")
"""A setting whose key is a name (``site_name: My Docs Site``, ``baseUrl: …``)
and whose value is words: data whatever the value reads like."""
_KEY_WORDS = re.compile(r"^\s*(- )?[a-z][a-z0-9]*(-[a-z0-9]+)*:\s+\S")
"""A setting whose key is plain words (``description: A site about cats``): data when a line
next to it in its block is material, prose alone ("note: the proxy sets it")."""
_COMMENT = re.compile(r"^\s*(#|//|/\*|\*/?|--|;;|<!--|%)")
_SYMBOLS = re.compile(r"[{}\[\]()<>=;|&*/\\$@^~`+]")
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
INLINE_CODE = re.compile(r"`[^`\n]*`")
_INDENT = re.compile(r"^(    |\t)")
_HEADING = re.compile(r"^#{1,6} [^\s#]")


def line_kinds(lines: list[str]) -> list[str]:
    """``"prose"``, ``"material"`` or ``"blank"`` for each line.

    Fenced blocks are material whole. Outside them a line is material when it looks like code, a
    log line, a stack trace, a diff or data; a comment line is material inside material; a line
    that asks in at least :data:`ASKING_WORDS` plain words is prose whatever code it quotes.
    """
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
            elif _COMMENT.match(line) and not LIST_ITEM.match(line):
                kinds[number] = "comment"
            elif _asks(line):
                kinds[number] = "prose"
            else:
                kinds[number] = "material" if _is_material(line) else "prose"
    _settle_comments(lines, kinds)
    _settle_settings(lines, kinds)
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
    if TRACE.match(line) or DIAGNOSTIC.match(line) or _LOG.match(line) or CODE_START.match(line):
        return True
    if _DATA.match(line):
        return True
    if _SETTING_WORDS.match(line):
        return True
    if _INDENT.match(line) and not LIST_ITEM.match(line):
        return True
    bare = LIST_ITEM.sub("", INLINE_CODE.sub(" code ", line)).strip()
    letter_words = LETTER_WORD.findall(bare)
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
    if TRACE.match(line) or DIAGNOSTIC.match(line) or _LOG.match(line) or _INDENT.match(line):
        return False
    if not is_question_sentence(INLINE_CODE.sub("code", line.strip())):
        return False
    bare = INLINE_CODE.sub(" ", line)
    plain = [token for token in bare.split() if _PLAIN_WORD.fullmatch(token.strip(".,;:!?\"'()«»„“”"))]
    return len(plain) >= ASKING_WORDS and len(plain) >= 0.5 * len(bare.split())


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


def _settle_settings(lines: list[str], kinds: list[str]) -> None:
    """A prose line that reads as a plain-word setting (``description: A site about cats``) is
    material when the line before or after it is material: a run of YAML keeps its lines."""
    for number, kind in enumerate(kinds):
        if kind != "prose" or not _KEY_WORDS.match(lines[number]) or _asks(lines[number]):
            continue
        if any(0 <= other < len(kinds) and kinds[other] == "material" for other in (number - 1, number + 1)):
            kinds[number] = "material"
