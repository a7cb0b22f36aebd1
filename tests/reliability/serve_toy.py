"""``passageway serve`` exactly as a user runs it, with the deterministic toy embedder added.

The reliability suite starts this as a real process (so it can ``kill -9`` it): the command line,
the logging, the signal handling and every route are the real ones; only the embedder kind
``toy`` is registered besides the builtins, because the model is not what these tests are about.

``TOY_EMBED_DELAY`` (seconds per embedder call) slows the build down so that a kill lands in it;
``TOY_EMBED_LOG`` names a file that gets one line per embedded text (its SHA-256), so a test can
count what was embedded twice across kills. ``TOY_FETCH_BATCH`` sets how many ids a fetch call
asks for (the sync's ``fetch_batch``, 50 unless set): a failing batch is fetched again one id at a
time, one connector process each, so the reduced runs use smaller batches to start fewer.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import Sequence

from passageway import hookimpl
from passageway.kernel import plugins
from passageway.testing.toy_embedder import ToyEmbedder


class LoggedToyEmbedder(ToyEmbedder):
    async def embed(self, texts: Sequence[str], kind: str):  # type: ignore[no-untyped-def]
        delay = float(os.environ.get("TOY_EMBED_DELAY") or 0)
        if delay and kind == "passage":
            await asyncio.sleep(delay)
        vectors = await super().embed(texts, kind)
        log = os.environ.get("TOY_EMBED_LOG")
        if log and kind == "passage":
            lines = "".join(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() + "\n"
                            for text in texts)
            with open(log, "a", encoding="ascii") as handle:  # a few bytes, appended
                handle.write(lines)
        return vectors


class ToyPlugin:
    @hookimpl
    def passageway_register_embedders(self, register):  # type: ignore[no-untyped-def]
        register("toy", lambda settings, context: LoggedToyEmbedder())


def main() -> int:
    original = plugins.build_plugin_manager

    def with_toy(*args, **kwargs):  # type: ignore[no-untyped-def]
        kwargs["extra"] = (*kwargs.get("extra", ()), ("toy", ToyPlugin()))
        return original(*args, **kwargs)

    plugins.build_plugin_manager = with_toy  # type: ignore[assignment]
    if os.environ.get("TOY_FETCH_BATCH"):
        from passageway.kernel.index import sync

        batch = int(os.environ["TOY_FETCH_BATCH"])

        class SmallerBatches(sync.SourceSync):  # type: ignore[misc]
            def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                super().__init__(*args, **{"fetch_batch": batch, **kwargs})

        sync.SourceSync = SmallerBatches  # type: ignore[misc]
    from passageway.kernel import cli

    return cli.main(["serve", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
