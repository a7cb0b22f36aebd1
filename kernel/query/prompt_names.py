"""The names of a paste, and which of them the sources know: evidence for the question asked.

A question cut out of a pasted traceback, config or piece of code is often vague on its own
("What's going on?", "How do I make it open in the tab instead?"); the paste says what it is
about, in names: an exception, a ``--flag``, a module, a class or function, a keyword argument, a
settings key. :func:`paste_terms` collects them (rule 5 of :mod:`passageway.kernel.query.prompt`);
they join the keyword search. :func:`known_names` keeps those that a candidate passage shows as
code (in backticks or a fenced block), and recall embeds the question again with the first
:data:`MAX_EVIDENCE` of them. A name that no source shows as code says nothing about the sources,
so a paste unrelated to them (the XQuAD long prompts paste this repository's code under questions
about Wikipedia articles) changes nothing; a paste that asks nothing is never searched at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from passageway.kernel.query.prompt_lines import CODE_START, TRACE
from passageway.kernel.store import Candidate
from passageway.kernel.text.fences import FENCE_RUN

MAX_TERMS = 8
"""The most names of a paste that go with its question into the keyword search."""

MAX_EVIDENCE = 3
"""The most known names embedded with the question. Chosen on the tuning projects (starship,
typer) of ``corpus/docs/pastes.toml``: 2 and 3 found one paste more than 4 and 8; the held-out
project (starlette) found all ten with any of them (docs/ranking-and-gate.md, "Long prompts")."""

KEYWORD_NAMES = "none"
"""Which names of a paste join the keyword search: ``"all"`` that :func:`paste_terms` found,
``"known"`` only those :func:`known_names` keeps (after a first search with the question alone),
or ``"none"``. Chosen by ``bench/paste_rules.py`` on the tuning projects (starship, typer) with
the answerability score on (docs/ranking-and-gate.md, "Long prompts"); ``"all"`` before the
score's weights ``docs-2026-12-c``."""

BARE_FIRST = True
"""When the question is embedded again with known names, its first search (the question alone
when :data:`KEYWORD_NAMES` is ``"none"``) keeps its ranking and the answer takes the two rankings
in turn, the first one leading, so a paste's names can add a page but not push out the page the
question alone finds; the answer is then judged by that first search. Chosen with
:data:`KEYWORD_NAMES` (off before ``docs-2026-12-c``)."""

_EXCEPTION = re.compile(r"\b(?:[a-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt))\b")
_FLAG = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]+)")
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+([\w, ]+)|import\s+([\w., ]+))")
_PACKAGE_PATH = re.compile(r"(?:site-packages|dist-packages|node_modules)/([\w.-]+)/")
_BASES = re.compile(r"^\s*class\s+\w+\(([^)]*)\)")
_DECORATOR = re.compile(r"^\s*@([\w.]+)")
_DOTTED = re.compile(r"(?<![\w.-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?=[\s(\[:),=]|$)")
_CAPITALISED = re.compile(r"(?<![\w.])([A-Z]\w*[a-z]\w*)\b")
_ANNOTATION = re.compile(r"(?:[(,]\s*\w+\s*:|->)\s*([A-Za-z_][\w.]*)")
_KEYWORD_ARGUMENT = re.compile(r"[(,]\s*([A-Za-z_]\w*)\s*=(?!=)")
_TABLE = re.compile(r"^\s*\[\[?([\w.-]+)\]\]?\s*$")
# A setting's key is the whole run of name characters before ``=`` or ``:``; it counts when it
# holds a ``_``, ``.`` or ``-`` after its first letter, or is one plain lower-case word. The run is
# taken whole and judged in Python: a pattern that split it at each separator in turn backtracked
# over every split, quadratic on a long pasted run of underscores (issue 38).
_SETTING = re.compile(r"^\s*\"?([A-Za-z][\w.-]*)\"?\s*[:=]")
_PLAIN_KEY = re.compile(r"[a-z][a-z0-9]*")


def _setting_key(line: str) -> str | None:
    found = _SETTING.match(line)
    if found is None:
        return None
    key = found.group(1)
    if any(mark in key[1:] for mark in "_.-") or _PLAIN_KEY.fullmatch(key):
        return key
    return None
_FENCED = re.compile(FENCE_RUN + r".*?(?:\1|$)", re.DOTALL)
_BACKTICKED = re.compile(r"`[^`\n]+`")

GENERIC_NAMES = frozenset((
    "exception", "error", "warning", "note", "help", "hint", "fatal", "traceback", "valueerror",
    "typeerror", "runtimeerror", "keyerror", "oserror", "self", "cls", "str", "int", "bool", "float",
    "none", "true", "false", "list", "dict",
))
"""Names too common to be evidence: they are in every paste and in no page about one thing."""


def paste_terms(material: Iterable[str], question: str = "") -> tuple[str, ...]:
    """The names in pasted ``material`` lines that may say what the question is about.

    In this order, each once, none that ``question`` already holds, at most :data:`MAX_TERMS`:
    exception names (``WebSocketDisconnect``; not the generic ``ValueError``); ``--flags``;
    imported modules and the packages a trace runs through; names of the code (base classes,
    decorators, ``dotted.names``, ``CamelCase`` names, type annotations: ``Enum``,
    ``app.callback``, ``typer.Context``, ``TestClient``); keyword arguments, TOML tables and
    settings keys (``callback=…``, ``[directory]``, ``allow_origins = …``, ``DATABASE_URL=…``).
    """
    found: dict[str, list[str]] = {"exception": [], "flag": [], "module": [], "name": [], "setting": []}
    for line in material:
        found["exception"] += _EXCEPTION.findall(line)
        found["flag"] += _FLAG.findall(line)
        imported = _IMPORT.match(line)
        if imported:
            names = " ".join(part for part in imported.groups() if part)
            found["module"] += [name for name in re.split(r"[\s,]+", names) if name]
        found["module"] += _PACKAGE_PATH.findall(line)
        bases = _BASES.match(line)
        if bases:
            found["name"] += [base.strip() for base in bases.group(1).split(",")]
        found["name"] += _DECORATOR.findall(line)
        found["name"] += [name for name in _DOTTED.findall(line) if not name.startswith(("self.", "cls."))]
        found["name"] += [word for word in _CAPITALISED.findall(line) if any(c.isupper() for c in word[1:])]
        found["name"] += _ANNOTATION.findall(line)
        found["setting"] += _KEYWORD_ARGUMENT.findall(line) + _TABLE.findall(line)
        setting = _setting_key(line)
        if setting and not CODE_START.match(line) and not TRACE.match(line):
            found["setting"].append(setting)
    asked_words = {word.casefold() for word in re.findall(r"[\w.-]+", question)}
    terms: dict[str, None] = {}
    for kind in ("exception", "flag", "module", "name", "setting"):
        for name in found[kind]:
            name = name.strip(".")
            folded = name.casefold()
            if folded in GENERIC_NAMES or folded in asked_words or len(name) < 3:
                continue
            terms.setdefault(name, None)
    return tuple(terms)[:MAX_TERMS]


def shown_as_code(text: str) -> str:
    """The parts of a passage's Markdown that are code: fenced blocks and backticked spans."""
    return " ".join(match.group(0) for pattern in (_FENCED, _BACKTICKED) for match in pattern.finditer(text))


def known_names(terms: Iterable[str], candidates: Iterable[Candidate]) -> tuple[str, ...]:
    """The ``terms`` (in their order) that one of ``candidates`` shows as code, exactly as
    written and not inside a longer name; at most :data:`MAX_EVIDENCE`."""
    wanted = list(terms)
    if not wanted:
        return ()
    code = " ".join(shown_as_code(candidate.text) for candidate in candidates)
    known = [name for name in wanted
             if re.search(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-]|\.\w)", code)]
    return tuple(known[:MAX_EVIDENCE])


def with_names(question: str, names: Iterable[str]) -> str:
    """What recall embeds the second time: the question, then the names the sources know."""
    return " ".join((question, *names))
