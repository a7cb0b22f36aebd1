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
a kernel in the ``error`` state (:meth:`Kernel.broken`) that still answers ``/health``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from passageway import __version__
from passageway.kernel.auth import bearer_token, password_matches
from passageway.kernel.embedder import cross_language_offset_of
from passageway.kernel.errors import ConfigError, EmbedderError, PassagewayError
from passageway.kernel.gate_levels import gate_threshold
from passageway.kernel.index.replicas import Role, SharedStore, replica_name, run_source
from passageway.kernel.index.sources import Source, SourceSyncLike, SyncFactory, removed_sources
from passageway.kernel.query.question_queue import QuestionQueue
from passageway.kernel.records import Answer
from passageway.kernel.store import StoreContext

if TYPE_CHECKING:
    from pathlib import Path

    from passageway.kernel.config import ConnectorSettings, Settings
    from passageway.kernel.embedder import Embedder
    from passageway.kernel.plugins import PluginManager, Registries
    from passageway.kernel.store import Store

log = logging.getLogger("passageway.kernel")


QUEUE_QUESTIONS = True
"""Whether recall's questions go through a :class:`QuestionQueue` (``bench/long_prompts.py
--compare-queue`` times the server without it too, side by side)."""


class Kernel:
    """Ties settings, plugins, the embedder, the stores, the syncs and health together.

    Build one with :meth:`open` (everything started) or :meth:`create` (nothing started yet, for
    the server, which starts each resource in its own ``cleanup_ctx``).
    """

    chunk_cap: int | None = None
    """The longest passage in characters; None keeps the chunker's default. Eval sweeps it."""

    def __init__(
        self,
        settings: Settings | None,
        *,
        manager: PluginManager | None = None,
        registries: Registries | None = None,
        environ: Mapping[str, str] | None = None,
        password: str | None = None,
        config_error: str | None = None,
        sync_factory: SyncFactory | None = None,
    ) -> None:
        self.settings = settings
        self.manager = manager
        self.registries = registries
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.password = password
        self.config_error = config_error
        self.instance = settings.instance if settings is not None else None
        self.embedder: Embedder | None = None
        self.questions: QuestionQueue | None = None
        """The embedder as recall sees it: questions one at a time, typed ones first."""
        self.embedder_error: str | None = None
        self.embedder_started = False
        """Whether the embedder's start succeeded (health names it only then)."""
        self.ranker: Any = None
        self.sources: dict[str, Source] = {}
        self.started_at = time.time()
        self._sync_factory = sync_factory or self._make_source_sync
        self.vector_cache: Any = None
        self._sync_tasks: dict[str, asyncio.Task[Any]] = {}
        self.sync_errors: dict[str, str] = {}
        """The last failure of a kernel-driven build or reconcile, per source (cleared on success)."""
        self.replica = replica_name()
        """This server's name among replicas sharing one index (see kernel/index/replicas.py)."""
        self.roles: dict[str, Role] = {}
        """Per source on a shared store: which replica syncs it (health shows it)."""

    # -----------------------------------------------------------------------------------------
    # Construction
    # -----------------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        settings: Settings,
        manager: PluginManager | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        sync_factory: SyncFactory | None = None,
    ) -> Kernel:
        """A kernel with its plugins loaded and its ranker chosen, nothing started yet.

        A plugin or ranker that cannot be loaded gives a kernel in the ``error`` state rather than
        an exception, so that a server still answers ``/health`` with the reason.
        """
        from passageway.kernel.config import load_password
        from passageway.kernel.plugins import build_plugin_manager, collect_registries

        environ = os.environ if environ is None else environ
        password = _password_or_none(environ)
        try:
            manager = manager or build_plugin_manager(environ)
            registries = collect_registries(manager)
            kernel = cls(
                settings, manager=manager, registries=registries, environ=environ,
                password=load_password(environ) if password is None else password,
                sync_factory=sync_factory,
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
        kernel = cls(settings, environ=environ, password=_password_or_none(environ), config_error=error)
        kernel.instance = instance if settings is None else settings.instance
        return kernel

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        manager: PluginManager | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        sync_factory: SyncFactory | None = None,
    ) -> AsyncIterator[Kernel]:
        """A started kernel (embedder and stores open, no background sync), closed on exit.

        :raises PassagewayError: the configuration or the plugins cannot be used.
        """
        kernel = cls.create(settings, manager, environ, sync_factory=sync_factory)
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

    # -----------------------------------------------------------------------------------------
    # Resources, each with its start and stop
    # -----------------------------------------------------------------------------------------

    async def start_embedder(self) -> None:
        """Build and start the embedder; a failure is kept for health and recall, not raised."""
        if self.config_error is not None or self.settings is None or self.registries is None:
            return
        try:
            if self.embedder is None:
                self.embedder = self._build_embedder()
            cross_language_offset_of(self.embedder)  # a bad value fails now, not at the first question
            gate_threshold(self.embedder, self.settings.embedder.gate)  # so does an unmeasured level
            await self.embedder.start()
        except PassagewayError as error:
            self.embedder_error = str(error)
            log.error("the embedder could not start: %s", error)
        except Exception as error:  # a third-party embedder's bug must not stop the server (V6)
            self.embedder_error = f"{type(error).__name__}: {error}"
            log.exception("the embedder could not start")
        else:
            self.embedder_error = None
            self.embedder_started = True
            self.questions = QuestionQueue(self.embedder) if QUEUE_QUESTIONS else None
            log.info("embedder %s ready (dimension %d)", self.embedder.name, self.embedder.dim)

    def _build_embedder(self) -> Embedder:
        assert self.settings is not None and self.registries is not None
        factory = self.registries.embedders.get(self.settings.embedder.kind)
        return factory(self.settings.embedder, self.embedder_context())  # type: ignore[no-any-return]

    def embedder_context(self) -> Any:
        from passageway.kernel.embedder import EmbedderContext

        assert self.settings is not None
        return EmbedderContext(
            data_dir=self.settings.data_dir,
            shared_data_dir=self.settings.shared_data_dir,
            model_dir=self.settings.model_dir,
            model_hub=self.settings.model_hub,
            environ=self.environ,
            log=lambda message: log.info("%s", message),
        )

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
        for connector in self.settings.connectors:
            source = Source(connector)
            self.sources[connector.name] = source
            try:
                store = factory(self.settings.data_dir / f"{connector.name}.db", connector.name,
                                StoreContext(self.settings.file.store, self.environ))
                await store.open()
                source.store = store
            except PassagewayError as error:
                source.error = str(error)
                log.error("source %s: the index cannot be opened: %s", connector.name, error)
                continue
            except Exception as error:
                source.error = f"the index cannot be opened: {type(error).__name__}: {error}"
                log.exception("source %s: the index cannot be opened", connector.name)
                continue
            if self.embedder is not None and self.embedder_started:
                try:
                    if self._sync_factory == self._make_source_sync:
                        await self._open_vector_cache()
                    source.sync = self._sync_factory(connector, store, self.embedder, self.environ)
                except PassagewayError as error:
                    source.error = str(error)
        if self.embedder is not None and self.embedder_started:
            self.sources.update(await removed_sources(
                factory, StoreContext(self.settings.file.store, self.environ), self.settings.data_dir,
                set(self.sources), (self.embedder.name, self.embedder.dim),
            ))

    def _make_source_sync(
        self, connector: ConnectorSettings, store: Store, embedder: Embedder, environ: Mapping[str, str]
    ) -> SourceSyncLike:
        from passageway.kernel.connector import runner as connector_module
        from passageway.kernel.index import sync as sync_module

        logger = logging.getLogger(f"passageway.sync.{connector.name}")
        runner = connector_module.ConnectorRunner(connector, environ=environ, logger=logger)
        options = {} if self.chunk_cap is None else {"cap": self.chunk_cap}
        return sync_module.SourceSync(  # type: ignore[no-any-return]
            connector, store, embedder, runner, self.vector_cache, **options
        )

    async def _open_vector_cache(self, folder: Path | None = None) -> None:
        """The cache of passage vectors by digest, shared by every source of this embedder, from
        the ``passageway_vector_cache`` hook, with its file (if any) in ``folder`` (by default
        the data folder)."""
        if self.vector_cache is not None or self.embedder is None or self.settings is None:
            return
        from passageway.kernel.plugins import build_plugin_manager

        manager = self.manager or build_plugin_manager(self.environ)
        cache = manager.hook.passageway_vector_cache(
            store=self.settings.store, folder=folder or self.settings.data_dir,
            embedder_name=self.embedder.name, dim=self.embedder.dim)
        await cache.open()
        self.vector_cache = cache

    async def close_stores(self) -> None:
        for source in self.sources.values():
            store, source.store = source.store, None
            if store is not None:
                with contextlib.suppress(Exception):
                    await store.close()
        cache, self.vector_cache = self.vector_cache, None
        if cache is not None:
            with contextlib.suppress(Exception):
                await cache.close()

    def start_background_sync(self) -> None:
        """One task per source: the first build or reconcile, then polling and reconciling."""
        assert self.settings is not None or not self.sources
        for name, source in self.sources.items():
            if source.sync is None or name in self._sync_tasks:
                continue
            self._sync_tasks[name] = asyncio.create_task(self._run_source(source), name=f"sync {name}")

    async def _run_source(self, source: Source) -> None:
        assert self.settings is not None and source.sync is not None
        try:
            role = Role(self.replica)
            if isinstance(source.store, SharedStore):  # health shows which replica syncs it
                role = self.roles.setdefault(source.name, role)
            await run_source(source.sync, source.store, self.settings.poll_seconds,
                             self.settings.reconcile_seconds, role)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the sync's own bug: this source stops, the server does not
            self.sync_errors[source.name] = f"the sync stopped: {type(error).__name__}: {error}"
            log.exception("source %s: the sync stopped", source.name)

    async def stop_background_sync(self) -> None:
        tasks, self._sync_tasks = self._sync_tasks, {}
        for task in tasks.values():
            task.cancel()
        for task in tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def sync_once(self) -> dict[str, str | None]:
        """Build (or reconcile) every source once, concurrently; returns each source's error or None.

        A source whose index is new or was built by another embedder is built in full, any other
        is reconciled (the sync decides). Failures are also kept for :meth:`health`.
        """

        async def one(source: Source) -> str | None:
            if source.sync is None:
                return source.error or self.embedder_error or "no sync for this source"
            try:
                await source.sync.sync_once()
            except PassagewayError as error:
                self.sync_errors[source.name] = str(error)
                return str(error)
            except Exception as error:
                message = f"{type(error).__name__}: {error}"
                self.sync_errors[source.name] = message
                log.exception("source %s: the sync failed", source.name)
                return message
            self.sync_errors.pop(source.name, None)
            return None

        sources = [source for source in self.sources.values() if not source.removed]
        results = await asyncio.gather(*(one(source) for source in sources))
        return {source.name: result for source, result in zip(sources, results, strict=True)}

    # -----------------------------------------------------------------------------------------
    # The query path
    # -----------------------------------------------------------------------------------------

    async def recall(
        self, question: str, *, boost_words: Iterable[str] = (), exclude_items: Iterable[tuple[str, str]] = ()
    ) -> Answer:
        """At most three passages for ``question``, or a silent :class:`Answer`.

        ``boost_words`` lift items whose title, path or labels contain one of them (the hook's
        folder names); ``exclude_items`` are ``(source, item_id)`` pairs already shown.

        :raises EmbedderError: the embedder is not running or fails; never an empty answer then.
        :raises PassagewayError: the configuration is broken.
        """
        if self.config_error is not None:
            raise PassagewayError(f"the configuration is broken: {self.config_error}")
        if self.embedder is None or not self.embedder_started:
            raise EmbedderError(f"the embedder is not running: {self.embedder_error or 'not started'}")
        from passageway.kernel.not_unicode import repaired
        from passageway.kernel.query.recall import recall as run_recall

        # Text that is not Unicode is the client's mistake; it must never fail the embedder and
        # turn health to degraded (the hook answers 400 before; other callers get it repaired).
        question = repaired(question)
        stores = [source.store for source in self.sources.values() if source.store is not None]
        started = time.perf_counter()
        try:
            answer = await run_recall(
                question, stores, self.questions or self.embedder, self.ranker,
                min_similarity=gate_threshold(self.embedder, self.settings.embedder.gate),
                boost_words=tuple(boost_words), exclude_items=tuple(exclude_items),
                vector_cache=self.vector_cache,
            )
        except EmbedderError as error:
            self.embedder_error = str(error)  # health says so until a recall succeeds again
            raise
        self.embedder_error = None
        notes = self.building_notes()
        if notes:
            answer = attrs.evolve(answer, notes=notes)
        # V2: the time and the number of hits, never the question.
        log.info("recall: %d hits in %.1f ms", len(answer.hits), (time.perf_counter() - started) * 1000)
        return answer

    def building_notes(self) -> tuple[str, ...]:
        """One line per source whose first build is running, for the answer (see ``Answer.notes``)."""
        notes = []
        for source in self.sources.values():
            if source.sync is None:
                continue
            note = source.sync.health().building_note()
            if note:
                notes.append(note)
        return tuple(notes)

    # -----------------------------------------------------------------------------------------
    # Health and authorisation
    # -----------------------------------------------------------------------------------------

    @property
    def version(self) -> str:
        configured = self.settings.app_version if self.settings is not None else None
        return configured or self.environ.get("APP_VERSION") or __version__

    def health(self, include_errors: bool) -> dict[str, Any]:
        """The health report (:func:`passageway.kernel.index.health.health_report`); error texts only when
        ``include_errors`` (the caller showed the password)."""
        from passageway.kernel.index.health import health_report

        return health_report(self, include_errors)

    def authorize(self, request: Any) -> bool:
        """Whether ``request`` carries ``Authorization: Bearer <password>`` (constant-time)."""
        return password_matches(bearer_token(request), self.password)


def _password_or_none(environ: Mapping[str, str] | None) -> str | None:
    from passageway.kernel.config import load_password

    try:
        return load_password(environ)
    except PassagewayError:
        return None
