"""Each lost edit the soak finds, with its class: explained by a rule of the spec, or not.

An edit is lost when the tip of its tenant's branch, or the cluster, does not hold the editor's
last write of the object (``checks.differences``). The soak prints every loss; it fails on the
unexplained ones. One class is explained by the spec itself:

- ``W2 tie``: the branch worker judged an event of the object a same-second tie *after* the
  object's last API edit (its log line ``apply window: ambiguous ConfigMap/<ns>/<name>``, W3).
  The newest ``managedFields`` entries shared one second between the editor and
  ``kustomize-controller``: Flux's apply reverted the edit within the second of the edit, and
  W2 ("only proof withholds: a tie within the same second with another manager could be the
  edit itself and is mirrored") has the product mirror that revert. The cluster and Git then
  both hold Flux's value: the edit is lost, as the spec accepts (``managedFields`` times have
  a resolution of one second; only a finer proof could withhold it).

Everything else is ``unexplained``, including an object the product withheld (W1): Git keeps
the edit then, and the CatchUp must apply it back, so a loss after a withheld revert is a bug.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from shared.decide.apply_window import BY_AUDIT, BY_ORDER

W2_TIE = "W2 tie"
UNEXPLAINED = "unexplained"
#: The outcome of a tie's line when a fact gave it to the editor (not a collision).
EDIT = "edit"
#: The worker logs a collision after the watch delivered the apply's event, so it comes after
#: the edit it collides with; the editor stamps its history after the API call returned, which
#: can be a moment after the apply: a second of slack (the resolution of ``managedFields``).
SLACK_S = 1.0


@dataclass(frozen=True, slots=True)
class Collision:
    """One apply-window collision the branch worker logged (W3)."""

    at: float
    #: "withheld" | "ambiguous" | "historical", or "edit": a same-second tie a fact gave to the
    #: editor (mirrored and no collision, logged beside them, W2)
    outcome: str
    namespace: str
    name: str
    why: str


@dataclass(frozen=True, slots=True)
class Loss:
    """One object whose editor's last write is not in Git or not in the cluster."""

    namespace: str
    name: str
    where: str  # "git" | "cluster"
    what: str  # the difference, as checks.differences words it
    kind: str  # W2_TIE | UNEXPLAINED
    why: str

    def line(self) -> str:
        return f"{self.kind}: {self.namespace} {self.where}: {self.what} ({self.why})"


def collisions(log_files: Iterable[Path]) -> list[Collision]:
    """Every ``apply window:`` line of the branch workers' logs (JSON lines, every process
    incarnation appends to the same file), oldest first."""
    found: list[Collision] = []
    for path in log_files:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"apply window: ' not in line:
                continue
            try:
                record = json.loads(line)
                kind, namespace, name = str(record["object"]).split("/", 2)
                if kind != "ConfigMap":  # the editor writes ConfigMaps only
                    continue
                found.append(
                    Collision(
                        datetime.fromisoformat(record["time"]).timestamp(),
                        str(record["outcome"]),
                        namespace,
                        name,
                        str(record["message"]),
                    )
                )
            except (ValueError, KeyError):  # a line cut by a SIGKILL
                continue
    return sorted(found, key=lambda c: c.at)


def classify(
    namespace: str, name: str, last_edit_at: float | None, seen: list[Collision]
) -> tuple[str, str]:
    """(class, why) of a loss of ``namespace/name`` whose last API edit was at
    ``last_edit_at`` (None: the editor never touched it)."""
    if last_edit_at is None:
        return UNEXPLAINED, "an object the editor never wrote"
    ties = [
        c
        for c in seen
        if (c.namespace, c.name) == (namespace, name)
        and c.outcome == "ambiguous"
        and c.at >= last_edit_at - SLACK_S
    ]
    if ties:
        return W2_TIE, f"judged a same-second tie {ties[0].at - last_edit_at:+.2f}s after the edit"
    mine = [c for c in seen if (c.namespace, c.name) == (namespace, name) and c.outcome != EDIT]
    if mine:
        last = mine[-1]
        return UNEXPLAINED, f"last collision {last.outcome} {last.at - last_edit_at:+.2f}s"
    return UNEXPLAINED, "no apply-window collision logged for it"


def counts(seen: list[Collision]) -> dict[str, int]:
    """Collisions by outcome (what ``apply_window_collisions_total`` counted, from the logs)."""
    found = {"withheld": 0, "ambiguous": 0, "historical": 0}
    for collision in seen:
        if collision.outcome != EDIT:
            found[collision.outcome] = found.get(collision.outcome, 0) + 1
    return found


def ties(seen: list[Collision]) -> dict[str, int]:
    """W2: the same-second ties the branch workers judged, by outcome and the fact that decided
    each (``shared.decide.apply_window``: the watch's order, the audit fact of the write), or
    ``undecided``: a tie given to the applier is withheld, one given to the editor mirrored
    (its ``edit`` line), one no fact decides mirrored and counted ambiguous."""
    found: dict[str, int] = {}
    for collision in seen:
        if "same-second tie" not in collision.why:
            continue
        if collision.outcome == "ambiguous":
            key = "undecided"
        else:
            fact = BY_AUDIT if BY_AUDIT in collision.why else BY_ORDER
            key = f"{collision.outcome} by {fact}"
        found[key] = found.get(key, 0) + 1
    return found


def tie_exemptions(
    found: Iterable[Loss],
    final: dict[tuple[str, str], str | None],
    history: Iterable[tuple[float, str, str, str, str | None]],
    seen: Iterable[Collision],
    counts: Mapping[str, int],
) -> tuple[set[str], set[str]]:
    """The values the soak's commit checks may not count against a W2 tie: (final values that
    may be in no commit, values that may be added by a second commit).

    W2 mirrors a same-second tie between the applier and another manager (only proof
    withholds), so when the tie was the applier's revert of an API edit, Git gets the applier's
    value back: that value is added by a second commit, and if no later edit came the edit's
    own value is in no commit. Both follow from the tie the spec mandates, so they are exempt,
    and nothing else: a final value only for an object whose loss in Git is classified a tie;
    and for each ``ambiguous`` collision the branch worker logged, one value of its object:
    the latest the editor wrote *before* the tied edit (the last edit up to the collision)
    that Git holds in more than one commit (``counts``), which is what the revert restored.
    ``history`` holds the editor's (time, kind, namespace, name, value) writes. Every other
    value stays checked (the safety suite's rule: a tie's value "may be written twice",
    docs/safety.md).
    """
    finals: set[str] = set()
    for loss in found:
        value = final.get((loss.namespace, loss.name))
        if loss.kind == W2_TIE and loss.where == "git" and value is not None:
            finals.add(value)
    writes: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for at, _, ns, name, value in history:
        if value is not None:
            writes.setdefault((ns, name), []).append((at, value))
    restored: set[str] = set()
    for collision in seen:
        if collision.outcome != "ambiguous":
            continue
        before = sorted(
            w
            for w in writes.get((collision.namespace, collision.name), [])
            if w[0] <= collision.at + SLACK_S
        )[:-1]  # every write before the tied edit
        repeated = [value for _, value in before if counts.get(value, 0) > 1]
        if repeated:
            restored.add(repeated[-1])
    return finals, restored


def undecided(seen: list[Collision]) -> dict[str, int]:
    """W2: the ties no fact decided (``ambiguous``), by the facts their log line says were
    missing (shared.decide.apply_window: the watch's order, the audit fact, attribution)."""
    found: dict[str, int] = {}
    for collision in seen:
        if collision.outcome != "ambiguous":
            continue
        _, _, missing = collision.why.partition("undecided: ")
        key = missing.rstrip(")") or "unnamed"
        found[key] = found.get(key, 0) + 1
    return found
