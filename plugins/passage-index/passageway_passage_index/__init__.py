"""The passage index of a built documentation site (``passageway index SITE_DIR``).

A static documentation site is built once; this package turns its build output into
``ai/chunks.json`` (passages with stable IDs, heading paths, section links and digests of their
embedding input) and, with ``--embed``, ``ai/embeddings.json`` and ``ai/embeddings.bin``. The
format is in ``docs/reference/passage-index.md``; ``connectors/site`` serves the result to
passageway's own recall.

Why here: it is stage code (reading a format, chunking, embedding), which STYLE.md keeps out of
``kernel/``. It takes no part in the server's loop; as a plugin it only registers its command,
``passageway index`` (:mod:`.command`, which parses the arguments). It holds its own
implementation like the other builtin subpackages and borrows the kernel's contracts: the block
splitter and digests of :mod:`passageway.kernel.text.chunking` (with a 2,000-character cap instead of
recall's 1,000), the digest-keyed :class:`~passageway.kernel.store.VectorCache`, and
embedders built from ``[embedder]`` through the plugin registries.

Modules: :mod:`.site` reads and checks the input files, :mod:`.markdown` the bits of Markdown it
needs, :mod:`.chunker` makes passages, :mod:`.prepared` their search content, :mod:`.vectors`
the embeddings, :mod:`.build` ties them together.
"""

from collections.abc import Callable
from typing import Any

from passageway import hookimpl
from passageway_passage_index.build import build_index, chunks_document
from passageway_passage_index.files import PassageIndexError

__all__ = ["PassageIndexError", "build_index", "chunks_document"]


@hookimpl
def passageway_register_commands(register: Callable[[str, Any], None]) -> None:
    from passageway_passage_index import command

    register(command.NAME, command)
