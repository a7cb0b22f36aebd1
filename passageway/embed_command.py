"""Run a program that speaks the embedder protocol: :class:`CommandEmbedder`.

See ``docs/embedder-protocol.md``. Outside an event loop its methods answer synchronously, so a
plain test can drive it::

    embedder = CommandEmbedder("mine", [sys.executable, "my_embedder.py"])
    try:
        check_embedder(embedder)
    finally:
        embedder.close()
"""

from passageway.kernel.embed_command import CommandEmbedder

__all__ = ["CommandEmbedder"]
