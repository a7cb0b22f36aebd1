"""The kernel: settings, plugins, the embedder, one store and one sync per source, and recall.

:class:`Kernel` is what both the server and ``passageway eval`` hold. It owns every resource and
every ``await`` of the data flow; the stages it drives (stores, the embedder, the ranker) come from
the plugin registries. Each resource has its own start and stop pair so that the server can give
each one an aiohttp ``cleanup_ctx`` of its own; :meth:`Kernel.open` runs them all in order for
in-process use::

    async with Kernel.open(settings) as kernel:
        await kernel.sync_once()
        answer = await kernel.recall("how does the gate work?")

A broken piece breaks only itself (V6): a source whose store or connector fails is reported as
``failing`` by :meth:`health` and the others keep serving; an embedder that fails to start makes
:meth:`recall` raise instead of answering with silence; a configuration that cannot be read gives
a kernel in the ``error`` state (:meth:`Kernel.broken`) that still answers ``/health``. Each
piece lives on its data path: sources and syncs in :mod:`passageway.kernel.index`, the steps of
:meth:`Kernel.recall` in :mod:`passageway.kernel.query`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from passageway import __version__
from passageway.kernel.auth import bearer_token, password_matches
from passageway.kernel.embedder import BaseEmbedder, EmbedderContext, with_defaults
from passageway.kernel.errors import ConfigError, EmbedderError, PassagewayError
from passageway.kernel.gate_levels import gate_threshold
from passageway.kernel.index.replicas import replica_name
from passageway.kernel.index.sources import (
    Source,
    SourceSyncLike,
    SyncRuns,
    building_notes,
    close_sources,
    open_source,
    removed_sources,
)
from passageway.kernel.query import recall as steps
from passageway.kernel.query.question_queue import QuestionQueue
from passageway.kernel.query.rendering import excerpt, fit_budget
from passageway.kernel.ranking import Gate
from passageway.kernel.records import Answer, Question
from passageway.kernel.store import StoreContext

if TYPE_CHECKING:
    from passageway.kernel.config import ConnectorSettings, Settings
    from passageway.kernel.embedder import Embedder
    from passageway.kernel.plugins import PluginManager, Registries
    from passageway.kernel.query.excerpts import Windows
    from passageway.kernel.ranking import Ranker
    from passageway.kernel.store import Store

log = logging.getLogger("passageway.kernel")


class Kernel:
    """Ties settings, plugins, the embedder, the stores, the syncs and health together.

    Build one with :meth:`open` (everything started) or :meth:`create` (nothing started yet, for
    the server, which starts each resource in its own ``cleanup_ctx``). What eval and the
    benchmarks vary is a keyword argument, never a subclass: ``wrap_embedder`` (called with the
    embedder the settings build, it returns the one the kernel uses: eval meters it),
    ``vector_cache_folder`` (where the cache of passage vectors keeps its file; eval's is the
    shared data folder, so that a throwaway index reuses its vectors) and ``chunk_cap`` (the
    longest passage in characters). What varies per question is a field of the :class:`Question`.
    """

    def __init__(
        self,
        settings: Settings | None,
        *,
        manager: PluginManager | None = None,
        registries: Registries | None = None,
        environ: Mapping[str, str] | None = None,
        password: str | None = None,
        config_error: str | None = None,
        wrap_embedder: Callable[[Embedder], Embedder] | None = None,
        vector_cache_folder: Path | None = None,
        chunk_cap: int | None = None,
    ) -> None:
        self.settings = settings
        self.manager = manager
        self.registries = registries
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.password = password
        self.config_error = config_error
        self.instance = settings.instance if settings is not None else None
        self.embedder: BaseEmbedder | None = None
        self.questions: QuestionQueue | None = None
        """The embedder as recall sees it: questions one at a time, typed ones first."""
        self.embedder_error: str | None = None
        self.embedder_started = False
        """Whether the embedder's start succeeded (health names it only then)."""
        self.gate: Gate | None = None
        """The embedder's gate, built once when it starts (its level, its cross-language offset)."""
        self.ranker: Any = None
        self.sources: dict[str, Source] = {}
        self.wrap_embedder = wrap_embedder
        self.vector_cache_folder = vector_cache_folder
        self.chunk_cap = chunk_cap
        self.vector_cache: Any = None
        self.syncs = SyncRuns(replica_name())
        """The kernel-driven syncs, their failures and, on a shared store, the replicas' roles."""

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        settings: Settings,
        manager: PluginManager | None = None,
        environ: Mapping[str, str] | None = None,
        **variations: Any,
    ) -> Kernel:
        """A kernel with its plugins loaded and its ranker chosen, nothing started yet;
        ``variations`` are the keyword arguments of the class (``wrap_embedder``, ...).

        A plugin or ranker that cannot be loaded gives a kernel in the ``error`` state rather than
        an exception, so that a server still answers ``/health`` with the reason.
        """
        from passageway.kernel.config import load_password, password_or_none
        from passageway.kernel.plugins import build_plugin_manager, collect_registries

        environ = os.environ if environ is None else environ
        password = password_or_none(environ)
        try:
            manager = manager or build_plugin_manager(environ)
            registries = collect_registries(manager)
            kernel = cls(
                settings, manager=manager, registries=registries, environ=environ,
                password=load_password(environ) if password is None else password,
                **variations,
            )
            kernel.ranker = registries.rankers.get(settings.ranker)()
            registries.stores.get(settings.store)
            registries.embedders.get(settings.embedder.kind)
        except PassagewayError as error:
            return cls.broken(str(error), environ=environ, settings=settings)
        try:
            # Built (not started) now, so that the kind's check of its own keys fails like any
            # other mistake in passageway.toml; a model or program problem waits for the start.
            kernel.embedder = kernel._build_embedder()
        except ConfigError as error:
            return cls.broken(str(error), environ=environ, settings=settings)
        except Exception:  # reported by start_embedder, which builds it again
            kernel.embedder = None
        return kernel

    @classmethod
    def broken(
        cls, error: str, *, environ: Mapping[str, str] | None = None, settings: Settings | None = None,
        instance: str | None = None,
    ) -> Kernel:
        """A kernel for a configuration that cannot be used: it answers health with ``error``."""
        from passageway.kernel.config import password_or_none

        kernel = cls(settings, environ=environ, password=password_or_none(environ), config_error=error)
        kernel.instance = instance if settings is None else settings.instance
        return kernel

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        manager: PluginManager | None = None,
        environ: Mapping[str, str] | None = None,
        **variations: Any,
    ) -> AsyncIterator[Kernel]:
        """A started kernel (embedder and stores open, no background sync), closed on exit;
        ``variations`` as for :meth:`create`.

        :raises PassagewayError: the configuration or the plugins cannot be used.
        """
        kernel = cls.create(settings, manager, environ, **variations)
        if kernel.config_error is not None:
            raise PassagewayError(kernel.config_error)
        try:
            await kernel.start_embedder()
            await kernel.open_stores()
            yield kernel
        finally:
            await kernel.stop_background_sync()
            await kernel.close_stores()
            await kernel.close_embedder()

    # -- resources, each with its start and stop ------------------------------------------------

    async def start_embedder(self) -> None:
        """Build and start the embedder; a failure is kept for health and recall, not raised."""
        if self.config_error is not None or self.settings is None or self.registries is None:
            return
        try:
            if self.embedder is None:
                self.embedder = self._build_embedder()
            await self.embedder.start()
            # Built once: a bad offset or an unmeasured level fails now, not at the first question.
            self.gate = Gate.of(self.embedder, gate_threshold(self.embedder, self.settings.embedder.gate))
        except PassagewayError as error:
            self.embedder_error = str(error)
            log.error("the embedder could not start: %s", error)
        except Exception as error:  # a third-party embedder's bug must not stop the server (V6)
            self.embedder_error = f"{type(error).__name__}: {error}"
            log.exception("the embedder could not start")
        else:
            self.embedder_error = None
            self.embedder_started = True
            self.questions = QuestionQueue(self.embedder)
            log.info("embedder %s ready (dimension %d)", self.embedder.name, self.embedder.dim)

    def _build_embedder(self) -> BaseEmbedder:
        assert self.settings is not None and self.registries is not None
        factory = self.registries.embedders.get(self.settings.embedder.kind)
        # A protocol-only embedder gets the optional members' defaults here, once for the kernel.
        context = EmbedderContext.of(self.settings, self.environ, lambda message: log.info("%s", message))
        embedder = with_defaults(factory(self.settings.embedder, context))
        return embedder if self.wrap_embedder is None else with_defaults(self.wrap_embedder(embedder))

    async def close_embedder(self) -> None:
        embedder, self.embedder = self.embedder, None
        self.embedder_started = False
        self.questions = None
        if embedder is not None:
            with contextlib.suppress(Exception):
                await embedder.close()

    async def open_stores(self) -> None:
        """Open one store per source and build its sync; a failing source is only marked."""
        if self.config_error is not None or self.settings is None or self.registries is None:
            return
        factory = self.registries.stores.get(self.settings.store)
        from passageway.kernel.data_folder import secure_data_folder

        await asyncio.to_thread(secure_data_folder, self.settings.data_dir)  # 700, its files 600
        context = StoreContext(self.settings.file.store, self.environ)
        for connector in self.settings.connectors:
            source = self.sources[connector.name] = await open_source(
                connector, factory, self.settings.data_dir, context)
            if source.store is not None and self.embedder is not None and self.embedder_started:
                try:
                    await self._open_vector_cache()
                    source.sync = self._make_source_sync(connector, source.store, self.embedder)
                except PassagewayError as error:
                    source.error = str(error)
        if self.embedder is not None and self.embedder_started:
            self.sources.update(await removed_sources(
                factory, context, self.settings.data_dir, set(self.sources),
                (self.embedder.name, self.embedder.dim),
            ))

    def _make_source_sync(self, connector: ConnectorSettings, store: Store, embedder: Embedder
                          ) -> SourceSyncLike:
        from passageway.kernel.connector import runner as connector_module
        from passageway.kernel.index import sync as sync_module

        logger = logging.getLogger(f"passageway.sync.{connector.name}")
        runner = connector_module.ConnectorRunner(connector, environ=self.environ, logger=logger)
        options = {} if self.chunk_cap is None else {"cap": self.chunk_cap}
        return sync_module.SourceSync(  # type: ignore[no-any-return]
            connector, store, embedder, runner, self.vector_cache, **options
        )

    async def _open_vector_cache(self) -> None:
        """The cache of passage vectors by digest, shared by every source of this embedder, from
        the ``passageway_vector_cache`` hook, with its file (if any) in ``vector_cache_folder``
        (by default the data folder)."""
        if self.vector_cache is not None or self.embedder is None or self.settings is None:
            return
        from passageway.kernel.plugins import build_plugin_manager

        manager = self.manager or build_plugin_manager(self.environ)
        cache = manager.hook.passageway_vector_cache(
            store=self.settings.store, folder=self.vector_cache_folder or self.settings.data_dir,
            embedder_name=self.embedder.name, dim=self.embedder.dim)
        await cache.open()
        self.vector_cache = cache

    async def close_stores(self) -> None:
        await close_sources(self.sources.values())
        cache, self.vector_cache = self.vector_cache, None
        if cache is not None:
            with contextlib.suppress(Exception):
                await cache.close()

    def start_background_sync(self) -> None:
        """One task per source: the first build or reconcile, then polling and reconciling."""
        assert self.settings is not None or not self.sources
        if self.settings is not None:
            self.syncs.start(self.sources, self.settings.poll_seconds, self.settings.reconcile_seconds)

    async def stop_background_sync(self) -> None:
        await self.syncs.stop()

    async def sync_once(self) -> dict[str, str | None]:
        """Build (or reconcile) every source once, concurrently; returns each source's error or None.

        A source whose index is new or was built by another embedder is built in full, any other
        is reconciled (the sync decides). Failures are also kept for :meth:`health`.
        """
        sources = [source for source in self.sources.values() if not source.removed]
        return await self.syncs.once(sources, self.embedder_error or "no sync for this source")

    # -- the query path --------------------------------------------------------------------------

    async def recall(self, question: Question | str) -> Answer:
        """At most three passages for ``question`` (a :class:`Question`, or a bare prompt), or a
        silent :class:`Answer`: the query path's one entry, which calls its steps in order
        (:mod:`passageway.kernel.query.recall` describes each).

        :raises EmbedderError: the embedder is not running or fails; never an empty answer then.
        :raises StoreError: every store failed.
        :raises PassagewayError: the configuration is broken.
        """
        request = question if isinstance(question, Question) else Question(question)
        started = time.perf_counter()
        # In a thread: reducing 20,000 characters of many short lines is a few hundred ms of Python.
        reduced = await asyncio.to_thread(steps.what_is_asked, request.prompt)
        if not steps.worth_searching(reduced, request.only_questions):
            return self._fitted(Answer(), request, started)  # no search, so no embedder needed
        embedder, ranker, gate = self._query_stages(request)
        reduced = steps.within_limit(reduced, embedder)
        stores = [source.store for source in self.sources.values() if source.store is not None]
        try:
            vector = await steps.embedded_question(reduced, embedder)
            found = await steps.candidates(reduced, vector, stores, embedder)
        except EmbedderError as error:
            self.embedder_error = str(error)  # health says so until a recall succeeds again
            raise
        self.embedder_error = None
        found = steps.with_session_rules(found, request.exclude_items, request.boost_words)
        judged = await steps.judged_hits(reduced, found, ranker, gate, self.vector_cache)
        if judged is None:
            return self._fitted(Answer(), request, started)
        text, found, kept, copies, lookup = judged
        hits, windows = await steps.excerpt_texts(kept, copies, found, lookup)
        related = await steps.related_items(kept, stores)
        return self._fitted(Answer(hits, related), request, started, text, windows)

    def _query_stages(self, request: Question) -> tuple[BaseEmbedder, Ranker, Gate]:
        if self.config_error is not None:
            raise PassagewayError(f"the configuration is broken: {self.config_error}")
        if self.embedder is None or not self.embedder_started or self.gate is None:
            raise EmbedderError(f"the embedder is not running: {self.embedder_error or 'not started'}")
        threshold = request.threshold  # passageway eval --threshold
        gate = self.gate if threshold is None else attrs.evolve(self.gate, min_similarity=float(threshold))
        return self.questions or self.embedder, request.ranker or self.ranker, gate

    def _fitted(self, answer: Answer, request: Question, started: float, text: str = "",
                windows: Mapping[str, Windows] | None = None) -> Answer:
        """Step 11: the notes of sources still building, then the budget over every line."""
        answer = attrs.evolve(answer, notes=building_notes(self.sources.values()))
        answer = fit_budget(answer, text, anchors=windows, rule=request.excerpt_rule or excerpt)
        # V2: the time and the number of hits, never the question.
        log.debug("recall: %d hits in %.1f ms", len(answer.hits), (time.perf_counter() - started) * 1000)
        return answer

    async def read(self, source: str, item_id: str, section: str | None = None) -> str:
        """The ``read`` tool's text: the passages of one indexed item or one of its sections
        (:mod:`passageway.kernel.query.reading`).

        :raises ReadError: an unknown source, item or section.
        :raises PassagewayError: the configuration is broken.
        """
        if self.config_error is not None:
            raise PassagewayError(f"the configuration is broken: {self.config_error}")
        from passageway.kernel.query.reading import read_item

        stores = {name: entry.store for name, entry in self.sources.items() if entry.store is not None}
        return await read_item(stores, source, item_id, section)

    # -- health and authorisation ----------------------------------------------------------------

    @property
    def version(self) -> str:
        configured = self.settings.app_version if self.settings is not None else None
        return configured or self.environ.get("APP_VERSION") or __version__

    def health(self, include_errors: bool) -> dict[str, Any]:
        """The health report (:func:`passageway.kernel.health.health_report`); error texts only when
        ``include_errors`` (the caller showed the password)."""
        from passageway.kernel.health import health_report

        return health_report(self, include_errors)

    def authorize(self, request: Any) -> bool:
        """Whether ``request`` carries ``Authorization: Bearer <password>`` (constant-time)."""
        return password_matches(bearer_token(request), self.password)
