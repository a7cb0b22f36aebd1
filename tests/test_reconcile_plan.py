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


STARSHIP_MODULES = ("prompt", "aws", "azure", "battery", "buf", "bun", "c", "character", "cmake",
                    "cmd-duration", "conda", "container", "crystal", "daml", "dart", "deno", "directory",
                    "docker-context", "dotnet", "elixir", "elm", "env-var", "erlang", "fill", "gcloud",
                    "git-branch", "git-commit", "git-state", "git-metrics", "git-status", "golang",
                    "hostname", "java", "jobs", "kubernetes", "line-break", "localip", "lua", "memory-usage",
                    "nodejs", "package", "python", "ruby", "rust", "shell", "status", "sudo", "terraform",
                    "time", "username")


def starship_source(split: bool) -> dict[str, str]:
    """starship's English pages as a source; with ``split``, the configuration page as the markdown
    connector's SPLIT_BYTES makes it: the page's id for its first part, ``#module`` for the rest."""
    pages = ["README.md", "faq/README.md", "guide/README.md", "installing/README.md",
             "advanced-config/README.md", "migrating-to-0.45.0/README.md", "presets/README.md",
             *(f"presets/{name}.md" for name in (
                 "nerd-font", "no-runtimes", "plain-text", "pastel-powerline", "tokyo-night",
                 "gruvbox-rainbow", "jetpack", "bracketed-segments", "no-empty-icons", "no-nerd-font",
                 "pure-preset", "catppuccin-powerline"))]
    stored = {page: "1" for page in pages}
    stored["config/README.md"] = "1"
    if split:
        stored.update({f"config/README.md#{module}": "1" for module in STARSHIP_MODULES})
    return stored


def test_a_page_split_into_section_items_counts_as_one_page_for_the_guard():
    for split in (False, True):
        stored = starship_source(split)
        listed = {item_id: "1" for item_id in stored if not item_id.startswith("config/README.md")}
        plan = reconcile_plan(listed, stored, max_fraction=0.3)  # removing the page: allowed either way
        assert len(plan.gone) == (51 if split else 1) and plan.changed == []
    # an edit that drops some of its sections changes one page
    stored = starship_source(True)
    listed = {item_id: "1" for item_id in stored if not item_id.endswith(("#aws", "#azure", "#gcloud"))}
    assert reconcile_plan(listed, stored, max_fraction=0.3).gone == ["config/README.md#aws",
                                                                    "config/README.md#azure",
                                                                    "config/README.md#gcloud"]


def test_the_guard_still_refuses_a_broken_listing_of_split_pages():
    stored = starship_source(True)
    with pytest.raises(DeletionRefused, match="all 20 pages"):
        reconcile_plan({}, stored, max_fraction=0.3)
    # seven of the twenty pages gone (the configuration page among them) is 35 %: refused
    kept = [page for page in stored if "#" not in page and page != "config/README.md"][6:]
    listed = {item_id: "1" for item_id in stored if item_id.rpartition("#")[0] in kept or item_id in kept}
    assert "config/README.md" not in listed
    with pytest.raises(DeletionRefused, match=r"7 of 20 pages .*35%"):
        reconcile_plan(listed, stored, max_fraction=0.3)


def test_ids_with_a_hash_but_no_page_item_count_one_by_one():
    # an issue tracker's ids (owner/repo#12): no item "owner/repo", so each issue is an item
    stored = {f"encode/starlette#{number}": "1" for number in range(1, 11)}
    listed = {item_id: "1" for item_id in list(stored)[4:]}
    with pytest.raises(DeletionRefused, match="4 of 10 items"):
        reconcile_plan(listed, stored, max_fraction=0.3)
