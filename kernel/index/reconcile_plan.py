"""What a reconcile changes, and the deletion guard that may refuse it.

A reconcile compares the connector's listing with the versions the store holds: ids that are new
or carry another version are fetched, ids no longer listed are deleted. Deleting is the one step
that can lose a whole index to a connector's bad day (an expired token that lists nothing), so
the guard here refuses a listing that would delete more than ``max_delete_fraction`` of a source,
and the sync (:mod:`.sync`) then changes nothing. Kept apart from the sync so the rule reads in
one place and is tested without a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from passageway.kernel.errors import DeletionRefused
from passageway.kernel.records import ListEntry


@attrs.frozen
class ReconcilePlan:
    """The ids a reconcile fetches (``changed``) and deletes (``gone``)."""

    changed: list[str]
    gone: list[str]


def latest_versions(entries: Sequence[ListEntry]) -> dict[str, str]:
    """``id → version``; a repeated id keeps its last version."""
    return {entry.id: entry.version for entry in entries}


def deletion_refusal(stored: int, deleting: int, max_fraction: float) -> str | None:
    """Why the guard refuses to delete ``deleting`` of ``stored`` items, or None when it may.

    One item may always go; all of a source of two or more may not; otherwise at most
    ``max_fraction`` of it.
    """
    if deleting <= 1:
        return None
    if deleting >= stored:
        return f"the listing would delete all {stored} items of the source"
    if deleting > max_fraction * stored:
        return (
            f"the listing would delete {deleting} of {stored} items ({deleting / stored:.0%}), "
            f"more than max_delete_fraction = {max_fraction:g} allows"
        )
    return None


def reconcile_plan(listed: Mapping[str, str], stored: Mapping[str, str], max_fraction: float
                   ) -> ReconcilePlan:
    """The plan that brings ``stored`` (id → version) to ``listed``.

    :raises DeletionRefused: the plan deletes more than the guard allows; the message says how to
        rebuild the source when the items are really gone.
    """
    changed = [item_id for item_id, version in listed.items() if stored.get(item_id) != version]
    gone = [item_id for item_id in stored if item_id not in listed]
    refusal = deletion_refusal(len(stored), len(gone), max_fraction)
    if refusal is not None:
        raise DeletionRefused(
            f"deletion guard: {refusal}; nothing was changed. If the items are really gone, "
            f"rebuild the source: stop the server, delete its index file and start it again"
        )
    return ReconcilePlan(changed, gone)
