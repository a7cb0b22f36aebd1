"""The embedder contract as a test helper: ``check_embedder(embedder)``.

It checks the dimension, finite numbers, unit length, determinism, the same vector alone and in
a batch, and that a question about lighthouses is closer to a passage about lighthouses than to
one about bananas. ``check_embedder_async`` is the same for code inside an event loop.
"""

from passageway.kernel.embedder_contract import check_embedder, check_embedder_async

__all__ = ["check_embedder", "check_embedder_async"]
