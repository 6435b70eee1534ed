"""Condition transitions as apimachinery's ``meta.SetStatusCondition`` makes them
(staging/src/k8s.io/apimachinery/pkg/api/meta/conditions.go: lastTransitionTime moves only
when the status differs; reason, message and observedGeneration are always updated), and the
kstatus trio (facts/upstream-gitops-reverser.md §2: Ready/Reconciling/Stalled, precedence
stalled > progressing > converged)."""

from __future__ import annotations

from shared.decide.conditions import (
    Problem,
    Wanted,
    changed,
    merge,
    ready_moved,
    trio,
)
from shared.model.crds import Condition
from shared.model.times import rfc3339

T0 = 1_900_000_000.0


def test_transition_time_moves_only_with_status() -> None:
    first = merge([], [Wanted("Ready", "False", "Waiting", "a")], 1, T0)
    later = merge(first, [Wanted("Ready", "False", "Other", "b")], 2, T0 + 60)
    (ready,) = later
    assert ready.last_transition_time == rfc3339(T0)
    assert (ready.reason, ready.message, ready.observed_generation) == ("Other", "b", 2)
    flipped = merge(later, [Wanted("Ready", "True", "Succeeded")], 2, T0 + 120)
    assert flipped[0].last_transition_time == rfc3339(T0 + 120)


def test_foreign_conditions_are_kept() -> None:
    applier = Condition("ApplierConfigured", "True", "Succeeded", "", rfc3339(T0), 1)
    merged = merge([applier], [Wanted("Ready", "True", "Succeeded")], 1, T0)
    assert {c.type for c in merged} == {"ApplierConfigured", "Ready"}
    assert applier in merged


def test_changed_ignores_order_and_sees_any_difference() -> None:
    merged = merge([], trio([]), 1, T0)
    assert not changed(list(reversed(merged)), merged)
    assert changed(merged, merge(merged, trio([]), 2, T0))  # observedGeneration moved


def test_trio_precedence() -> None:
    assert [(w.type, w.status) for w in trio([])] == [
        ("Ready", "True"),
        ("Reconciling", "False"),
        ("Stalled", "False"),
    ]
    healing = trio([Problem("Waiting", "w", permanent=False)])
    assert [(w.status, w.reason) for w in healing] == [
        ("False", "Waiting"),
        ("True", "Waiting"),
        ("False", "Waiting"),
    ]
    both = trio([Problem("Waiting", "w", permanent=False), Problem("Broken", "b")])
    assert [(w.status, w.reason) for w in both] == [
        ("False", "Broken"),
        ("False", "Broken"),
        ("True", "Broken"),
    ]


def test_ready_moved_reports_status_or_reason_changes_only() -> None:
    before = merge([], trio([Problem("A", "x")]), 1, T0)
    same = merge(before, trio([Problem("A", "other message")]), 1, T0)
    assert ready_moved(before, same) is None
    moved = ready_moved(before, merge(before, trio([Problem("B", "x")]), 1, T0))
    assert moved is not None and moved.reason == "B"
    assert ready_moved([], before) is not None
