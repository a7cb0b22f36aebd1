"""The errors passageway raises for things a user can fix.

Each message says what is wrong and what to do about it, and never contains a secret. The CLI
turns a :class:`PassagewayError` into one line on stderr and :attr:`exit_code`; the server turns
it into a ``/health`` entry. Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class PassagewayError(Exception):
    """Base class: a problem with input, configuration or a program passageway runs."""

    exit_code = 1


class ConfigError(PassagewayError):
    """``passageway.toml``, an environment variable or a command-line option is wrong.

    ``problems`` holds one line per mistake when a file had several, all reported at once.
    """

    exit_code = 2

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


class PluginError(PassagewayError):
    """A plugin could not be loaded or clashes with another one."""

    exit_code = 2


class ConnectorError(PassagewayError):
    """A connector call failed; nothing from it was stored.

    ``connector`` names the source and ``rule`` the protocol rule that was broken (for example
    ``"timeout"`` or ``"unrequested id"``), so a health report can group failures.
    """

    def __init__(self, connector: str, rule: str, message: str) -> None:
        super().__init__(f"connector {connector!r}: {rule}: {message}")
        self.connector = connector
        self.rule = rule


class SyncError(PassagewayError):
    """A build, reconcile or poll failed in whole or in part; health holds the same message."""


class DeletionRefused(SyncError):
    """A reconcile would delete more of a source than the deletion guard allows
    (:mod:`passageway.kernel.index.reconcile_plan`)."""


class EmbedderError(PassagewayError):
    """The embedder could not turn text into vectors; recall fails rather than falling silent."""


class ModelError(PassagewayError):
    """A built-in model preset is missing, unknown or fails its checksum."""

    exit_code = 2


class StoreError(PassagewayError):
    """An index file cannot be opened or does not fit the configured embedder."""


class EvalError(PassagewayError):
    """A cases file or an eval option is wrong."""

    exit_code = 2
