"""The soak's classes of a lost edit (tests/soak/losses.py): only a W2 tie after the object's
last edit is explained; everything else fails the soak."""

from __future__ import annotations

import json
from pathlib import Path

from tests.soak.losses import (
    UNEXPLAINED,
    W2_TIE,
    Collision,
    Loss,
    classify,
    collisions,
    counts,
    tie_exemptions,
    ties,
    undecided,
)


def line(at: str, outcome: str, obj: str) -> str:
    return json.dumps(
        {
            "time": at,
            "level": "WARNING",
            "message": f"apply window: {outcome} {obj} (why)",
            "object": obj,
            "outcome": outcome,
        }
    )


def test_the_worker_log_is_read_and_cut_lines_and_other_kinds_are_skipped(tmp_path: Path) -> None:
    log = tmp_path / "branch_worker.log"
    log.write_text(
        "\n".join(
            [
                line("2026-12-02T10:00:02+00:00", "ambiguous", "ConfigMap/ns/a"),
                '{"time": "2026-12-02T10:00:03+00:00", "message": "apply window: withh',
                line("2026-12-02T10:00:01+00:00", "withheld", "ConfigMap/ns/b"),
                line("2026-12-02T10:00:04+00:00", "withheld", "Secret/ns/c"),
                '{"message": "something else"}',
            ]
        )
    )
    seen = collisions([log, tmp_path / "missing.log"])
    assert [(c.outcome, c.namespace, c.name) for c in seen] == [
        ("withheld", "ns", "b"),
        ("ambiguous", "ns", "a"),
    ]
    assert counts(seen) == {"withheld": 1, "ambiguous": 1, "historical": 0}


def test_only_a_tie_after_the_last_edit_explains_a_loss() -> None:
    tie = Collision(100.5, "ambiguous", "ns", "a", "tie")
    assert classify("ns", "a", 100.0, [tie])[0] == W2_TIE
    assert classify("ns", "a", 103.0, [tie])[0] == UNEXPLAINED  # a tie before the last edit
    assert classify("ns", "b", 100.0, [tie])[0] == UNEXPLAINED  # another object's tie
    withheld = Collision(100.5, "withheld", "ns", "a", "reverted")
    assert classify("ns", "a", 100.0, [withheld])[0] == UNEXPLAINED  # W1 must repair it
    assert classify("ns", "a", None, [tie])[0] == UNEXPLAINED


def test_only_a_w2_tie_exempts_its_objects_values_from_the_commit_checks() -> None:
    """A tie (W2) restores the applier's value in Git: the edit's final value may be in no
    commit (only for an object whose Git loss is a tie), and one value of the object may be
    added twice: the latest written before the tied edit that Git holds twice (only with an
    ``ambiguous`` collision logged on that object). A loss in the cluster, an unexplained
    one, a withheld collision, a tie before the value's write, or a value another object
    holds exempts nothing; nor does a tie exempt an earlier double write of the object."""
    found = [
        Loss("ns", "a", "git", "a: ...", W2_TIE, "tie"),
        Loss("ns", "b", "cluster", "b: ...", W2_TIE, "tie"),
        Loss("ns", "c", "git", "c: ...", UNEXPLAINED, "none"),
        Loss("ns", "d", "git", "missing d", W2_TIE, "tie"),
    ]
    final = {("ns", "a"): "v-a3", ("ns", "b"): "v-b1", ("ns", "c"): "v-c1", ("ns", "d"): None}
    history = [
        (5.0, "update", "ns", "a", "v-a0"),
        (10.0, "update", "ns", "a", "v-a1"),
        (20.0, "update", "ns", "a", "v-a3"),
        (10.0, "update", "ns", "c", "v-c0"),
        (12.0, "update", "ns", "c", "v-c1"),
        (30.0, "update", "ns", "e", "v-e1"),
        (10.0, "update", "ns", "f", "v-f0"),
        (11.0, "update", "ns", "f", "v-f1"),
    ]
    seen = [
        Collision(20.5, "ambiguous", "ns", "a", "tie"),
        Collision(12.5, "withheld", "ns", "c", "revert"),
        Collision(12.0, "ambiguous", "ns", "e", "tie before the write"),
        Collision(11.5, "ambiguous", "other", "f", "another namespace"),
    ]
    counts = {"v-a0": 2, "v-a1": 2, "v-a3": 0, "v-c0": 2, "v-e1": 2, "v-f0": 2}
    assert tie_exemptions(found, final, history, seen, counts) == ({"v-a3"}, {"v-a1"})


def test_undecided_ties_are_counted_by_the_facts_they_missed() -> None:
    message = "apply window: ambiguous ConfigMap/ns/{} (same-second tie with kubectl-edit; "
    order = "undecided: the watch did not deliver the write before it; attribution is off)"
    audit = (
        "undecided: the watch did not deliver the write before it; no audit fact names this write)"
    )
    seen = [
        Collision(1.0, "ambiguous", "ns", "a", message.format("a") + order),
        Collision(2.0, "ambiguous", "ns", "b", message.format("b") + order),
        Collision(3.0, "ambiguous", "ns", "c", message.format("c") + audit),
        Collision(4.0, "withheld", "ns", "d", "apply window: withheld ConfigMap/ns/d (revert)"),
    ]
    assert undecided(seen) == {
        "the watch did not deliver the write before it; attribution is off": 2,
        "the watch did not deliver the write before it; no audit fact names this write": 1,
    }


def test_ties_are_counted_by_outcome_and_the_fact_that_decided_them() -> None:
    tie = "apply window: {} ConfigMap/ns/{} ({})"
    seen = [
        Collision(1.0, "withheld", "ns", "a", tie.format("withheld", "a", "kustomize-controller "
                  "reverted an API edit (a same-second tie, by the watch's order)")),
        Collision(2.0, "withheld", "ns", "b", tie.format("withheld", "b", "kustomize-controller "
                  "reverted an API edit (a same-second tie, by the audit fact of this write)")),
        Collision(3.0, "edit", "ns", "c", tie.format("edit", "c", "same-second tie with "
                  "kubectl-edit: the edit, by the audit fact of this write")),
        Collision(4.0, "edit", "ns", "d", tie.format("edit", "d", "same-second tie with "
                  "kubectl-edit: the edit, by the watch's order")),
        Collision(5.0, "ambiguous", "ns", "e", tie.format("ambiguous", "e", "same-second tie "
                  "with kubectl-edit; undecided: the watch did not deliver the write before "
                  "it; no audit fact names this write")),
        Collision(6.0, "withheld", "ns", "f", tie.format("withheld", "f", "reverted an API edit")),
    ]  # fmt: skip
    assert ties(seen) == {
        "withheld by the watch's order": 1,
        "withheld by the audit fact of this write": 1,
        "edit by the audit fact of this write": 1,
        "edit by the watch's order": 1,
        "undecided": 1,
    }
    assert counts(seen) == {"withheld": 3, "ambiguous": 1, "historical": 0}  # edit: no collision
