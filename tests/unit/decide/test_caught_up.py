"""D3 extended (issue 11, the apply race's path 1): a request is stamped only when the watches
feeding the branch have published what the API holds, and the stream holds nothing unpushed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from shared.decide.attempt import after_behind, watch_wait
from shared.decide.obligations import Wait, decide, owe_foreign_commit
from shared.decide.quiet import BranchView, busy_reasons, stale_reason, unmirrored
from shared.model.appliers import Applier

QUIET = BranchView(
    tip="c1", windows_open=0, pending_total=0, push_in_flight=False, last_write_at=0.0
)


def obj(name: str, uid: str, rv: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid, "resourceVersion": rv}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return {"metadata": meta}


def test_a_watch_that_published_every_object_is_caught_up() -> None:
    """D3: the same objects at the same uid and resourceVersion: nothing unmirrored."""
    known = {"a": ("u-a", "5"), "b": ("u-b", "9")}
    assert unmirrored([obj("a", "u-a", "5"), obj("b", "u-b", "9")], known) == []


def test_an_edit_the_watch_has_not_seen_is_unmirrored() -> None:
    """Issue 11 path 1: an edit made while the watcher was down (a newer resourceVersion), a
    new object, a deleted one, and a recreated one (same name, new uid) all count."""
    known = {"a": ("u-a", "5"), "gone": ("u-g", "3"), "re": ("u-r1", "4")}
    listed = [obj("a", "u-a", "7"), obj("new", "u-n", "8"), obj("re", "u-r2", "4")]
    assert unmirrored(listed, known) == ["a", "new", "re", "gone"]


def test_an_object_being_deleted_is_caught_up_once_the_watch_let_it_go() -> None:
    """M9: a listed object with a deletionTimestamp was published as a DELETE and left the
    watch's seen set; still in it, the DELETE is not published yet."""
    assert unmirrored([obj("a", "u-a", "6", deleting=True)], {}) == []
    assert unmirrored([obj("a", "u-a", "6", deleting=True)], {"a": ("u-a", "5")}) == ["a"]


def test_a_resource_version_is_compared_for_equality_only() -> None:
    """resourceVersions are opaque: an older one in the API than known is unmirrored too."""
    assert unmirrored([obj("a", "u-a", "10")], {"a": ("u-a", "9")}) == ["a"]
    assert unmirrored([obj("a", "u-a", "9")], {"a": ("u-a", "10")}) == ["a"]


def test_unmirrored_objects_make_the_request_stale_before_anything_else() -> None:
    """D3: the request is Stale when a watch is behind, even on a quiet branch at its tip."""
    assert stale_reason("c1", "c1", QUIET) is None
    why = stale_reason("c1", "c1", QUIET, ["ns/configmaps/a"])
    assert why is not None and "ns/configmaps/a" in why


def test_events_not_yet_pushed_keep_the_branch_busy() -> None:
    """Q3/D3: an event in the stream the owner has not read (or not pushed) is a write on its
    way: the branch is not quiet, the owner asks nothing and the dispatcher stamps nothing."""
    unread = replace(QUIET, unacked=1)
    assert busy_reasons(unread) == ("1 event(s) in the stream not yet pushed",)
    assert stale_reason("c1", "c1", unread) is not None
    applier = owe_foreign_commit(Applier("Kustomization"), "c1", ["u1"])
    assert decide(applier, unread, 1.0) == Wait("the branch is busy")


def test_an_attempt_waits_for_watches_behind_then_is_stale() -> None:
    """D3, A4: behind, the attempt pauses and reads again until ``wait_s`` after it first
    found the watches behind, or its deadline if that comes first; then it is Stale."""
    assert after_behind(100.0, 100.0, 60.0, 400.0) == "pause"
    assert after_behind(100.0, 159.9, 60.0, 400.0) == "pause"
    assert after_behind(100.0, 160.0, 60.0, 400.0) == "stale"
    assert after_behind(100.0, 120.0, 60.0, 120.0) == "stale"


def test_the_wait_for_watches_ends_before_the_owner_hands_the_attempt_back() -> None:
    """A2, A4: 60 s with the product's attempt deadline (330 s); half a shorter one."""
    assert watch_wait(330.0) == 60.0
    assert watch_wait(10.0) == 5.0
