"""What a reconcile changes, and the deletion guard that may refuse it.

A reconcile compares the connector's listing with the versions the store holds: ids that are new
or carry another version are fetched, ids no longer listed are deleted. Deleting is the one step
that can lose a whole index to a connector's bad day (an expired token that lists nothing), so
the guard here refuses a listing that would delete more than ``max_delete_fraction`` of a source,
and the sync (:mod:`.sync`) then changes nothing. Kept apart from the sync so the rule reads in
one place and is tested without a store.

The guard counts pages, not items: a long note that the markdown connector splits into one item
per section (``SPLIT_BYTES``) is the item ``path`` and its sections ``path#anchor``, and removing
that note is one deletion, as it is when the note is not split (:func:`page_of`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

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


def page_of(item_id: str, stored: Collection[str]) -> str:
    """The page ``item_id`` belongs to: ``path`` for a section item ``path#anchor`` whose page
    ``path`` is an item of the source too (the first part of a split note keeps the note's id),
    else the item itself. Other ids with a ``#`` (``owner/repo#12``) stay items of their own."""
    page, mark, _ = item_id.rpartition("#")
    return page if mark and page in stored else item_id


def deletion_refusal(stored: int, deleting: int, max_fraction: float, unit: str = "items") -> str | None:
    """Why the guard refuses to delete ``deleting`` of ``stored`` items (or pages), or None when
    it may.

    One item may always go; all of a source of two or more may not; otherwise at most
    ``max_fraction`` of it.
    """
    if deleting <= 1:
        return None
    if deleting >= stored:
        return f"the listing would delete all {stored} {unit} of the source"
    if deleting > max_fraction * stored:
        return (
            f"the listing would delete {deleting} of {stored} {unit} ({deleting / stored:.0%}), "
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
    pages = {page_of(item_id, stored) for item_id in stored}
    split = len(pages) < len(stored)
    refusal = deletion_refusal(len(pages), len({page_of(item_id, stored) for item_id in gone}),
                               max_fraction, "pages" if split else "items")
    if refusal is not None and split:
        refusal += " (a page split into section items counts once)"
    if refusal is not None:
        raise DeletionRefused(
            f"deletion guard: {refusal}; nothing was changed. If the items are really gone, "
            f"rebuild the source: stop the server, delete its index file and start it again"
        )
    return ReconcilePlan(changed, gone)
