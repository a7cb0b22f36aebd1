"""The reconcile's plan: what is fetched, what is deleted, and the deletion guard's rule.

The guard as the sync applies it (health, nothing changed on a refusal) is in tests/test_sync.py."""

from __future__ import annotations

import pytest

from passageway.kernel.errors import DeletionRefused, SyncError
from passageway.kernel.index.reconcile_plan import deletion_refusal, latest_versions, reconcile_plan
from passageway.kernel.records import ListEntry


def test_the_guard_rule():
    assert deletion_refusal(10, 3, 0.3) is None
    assert "4 of 10" in deletion_refusal(10, 4, 0.3)
    assert "all 2 items" in deletion_refusal(2, 2, 0.3)
    assert deletion_refusal(2, 1, 0.3) is None  # one item may always go
    assert deletion_refusal(1, 1, 0.3) is None
    assert deletion_refusal(100, 31, 0.3) is not None
    assert deletion_refusal(100, 30, 0.3) is None
    assert deletion_refusal(10, 9, 1.0) is None
    assert deletion_refusal(10, 10, 1.0) is not None


def test_the_plan_fetches_new_and_changed_items_and_deletes_unlisted_ones():
    listed = latest_versions([ListEntry(id="a", version="1"), ListEntry(id="b", version="1"),
                              ListEntry(id="b", version="2"), ListEntry(id="c", version="1")])
    assert listed == {"a": "1", "b": "2", "c": "1"}  # a repeated id keeps its last version
    plan = reconcile_plan(listed, {"a": "1", "b": "1", "d": "1"}, max_fraction=0.5)
    assert plan.changed == ["b", "c"] and plan.gone == ["d"]


def test_a_refused_plan_says_how_to_rebuild_and_is_a_sync_error():
    with pytest.raises(DeletionRefused, match="rebuild the source") as refused:
        reconcile_plan({}, {"a": "1", "b": "1"}, max_fraction=0.3)
    assert isinstance(refused.value, SyncError)
