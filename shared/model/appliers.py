"""An applier's record: what it is owed, the attempt out and its backoff, and the JSON for Redis.

These are records, not rules: the store keeps them, requests and outcomes carry their reason and
outcome names, and the pure rules in ``shared.decide.obligations`` turn one record into the
next (A1-A5). Keeping them here lets ``shared.model`` stand below ``shared.decide``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, cast

Reason = Literal["ForeignCommit", "Refusal", "CatchUp", "Repair"]
Outcome = Literal["Delivered", "Stale", "NothingToAsk", "Failed"]
ApplierKind = Literal["Kustomization", "Application", "Webhook"]
REASONS: tuple[Reason, ...] = ("ForeignCommit", "Refusal", "CatchUp", "Repair")
OUTCOMES: tuple[Outcome, ...] = ("Delivered", "Stale", "NothingToAsk", "Failed")


@dataclass(frozen=True, slots=True)
class KindRules:
    """Everything the records and rules know of one applier kind, in one place.

    ``KINDS`` below is where a new kind is added (with its adapter in ``shared.appliers``,
    which is keyed by the same kind); nothing else keeps a list of kinds, and
    ``tests/unit/appliers/test_kinds.py`` fails when either half misses one.
    """

    kind: ApplierKind
    #: The field of ``spec.applier`` that names one (the CRD's property).
    spec_field: str
    #: The tool's name for people (outcome messages, Events): ``Flux``, ``Argo CD``.
    product: str
    #: The reasons it is ever owed (A1, W1, D7). Every kind is owed ForeignCommit and Refusal;
    #: only a Kustomization a CatchUp (its GitRepository's artifact must follow our own pushes;
    #: an Application with automated sync off applies nothing on its own, so nothing it holds
    #: goes stale), and only an Application a Repair after the apply window withheld its
    #: revert of an API edit (a Kustomization is repaired by the CatchUp the edit's push owes;
    #: a webhook applier has no apply window).
    owed: frozenset[Reason]
    #: W1: the field managers it writes with (facts: appliers.md F3 for Flux's
    #: ``kustomize-controller``; A5 for Argo CD's ``argocd-controller`` on every apply, client-
    #: or server-side, and ``argocd-application-controller`` from its User-Agent when no
    #: manager is given). A webhook applier writes with whatever it likes, so none is proven.
    managers: frozenset[str]
    #: Whether ``spec.applier.quietPeriod`` may be given: it times the CatchUp (A2, A3).
    quiet_period: bool
    #: Whether the spec field names an object by ``name``/``namespace`` (else it describes an
    #: endpoint in the GitTarget's own namespace, as ``webhook`` does, D7).
    names_object: bool


#: THE table of applier kinds (the rules' half; the adapters' half is ``shared.appliers``).
KINDS: Mapping[ApplierKind, KindRules] = MappingProxyType(
    {
        "Kustomization": KindRules(
            kind="Kustomization",
            spec_field="kustomizationRef",
            product="Flux",
            owed=frozenset({"ForeignCommit", "Refusal", "CatchUp"}),
            managers=frozenset({"kustomize-controller"}),
            quiet_period=True,
            names_object=True,
        ),
        "Application": KindRules(
            kind="Application",
            spec_field="applicationRef",
            product="Argo CD",
            owed=frozenset({"ForeignCommit", "Refusal", "Repair"}),
            managers=frozenset({"argocd-controller", "argocd-application-controller"}),
            quiet_period=False,
            names_object=True,
        ),
        "Webhook": KindRules(
            kind="Webhook",
            spec_field="webhook",
            product="webhook",
            owed=frozenset({"ForeignCommit", "Refusal"}),
            managers=frozenset(),
            quiet_period=False,
            names_object=False,
        ),
    }
)


def rules_of(kind: str) -> KindRules | None:
    """The table's record for ``kind``; None for a kind no release knows (read from Redis)."""
    return KINDS.get(cast(ApplierKind, kind))


def is_owed(kind: str, reason: Reason) -> bool:
    """Whether an applier of ``kind`` is ever owed ``reason`` (an unknown kind: never)."""
    rules = rules_of(kind)
    return rules is not None and reason in rules.owed


def catches_up(kind: str) -> bool:
    """A1: whether an applier of ``kind`` is ever owed a CatchUp (the one rule for it)."""
    return is_owed(kind, "CatchUp")


def gets_repairs(kind: str) -> bool:
    """W1: whether an applier of ``kind`` is owed a Repair for a withheld collision."""
    return is_owed(kind, "Repair")


@dataclass(frozen=True, slots=True)
class Attempt:
    """The request out: its token, commit, reasons and the uids that held each reason."""

    token: str
    commit: str
    reasons: Mapping[Reason, frozenset[str]]
    sent_at: float
    deadline: float

    def to_data(self) -> dict[str, Any]:
        """The attempt as plain JSON data, uids sorted so equal attempts encode equally."""
        return {
            "token": self.token,
            "commit": self.commit,
            "sent_at": self.sent_at,
            "deadline": self.deadline,
            "reasons": {r: sorted(u) for r, u in self.reasons.items()},
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Attempt:
        """The inverse of ``to_data``."""
        reasons: dict[Reason, frozenset[str]] = {
            r: frozenset(u) for r, u in data["reasons"].items() if r in REASONS
        }
        return cls(data["token"], data["commit"], reasons, data["sent_at"], data["deadline"])


@dataclass(frozen=True, slots=True)
class Applier:
    """One applier's obligations, attempt out and backoff (A1-A5)."""

    kind: ApplierKind
    foreign_commit: str | None = None
    foreign_uids: frozenset[str] = frozenset()
    refusals: frozenset[str] = frozenset()
    #: GitTargets refused again while an attempt covering their Refusal was out: that apply may
    #: have run before the new edit, so its Delivered must not clear them (A4, A5).
    refused_again: frozenset[str] = frozenset()
    catch_up: str | None = None  # the commit of our latest push still to be caught up
    catch_up_uids: frozenset[str] = frozenset()
    attempt: Attempt | None = None
    failures: int = 0
    next_try_at: float = 0.0
    #: uid -> the GitTarget's quietPeriod in seconds, as the branch last published it (A3).
    quiet_periods: Mapping[str, float] = field(default_factory=dict)
    #: GitTargets whose folder had a withheld collision (W1): the Application owes one sync of
    #: the tip, no earlier than ``repair_at`` (when the colliding apply's window has closed).
    repairs: frozenset[str] = frozenset()
    #: GitTargets with a collision while an attempt covering their Repair was out: that sync
    #: was the revert, so its Delivered must not clear them (as ``refused_again``).
    repaired_again: frozenset[str] = frozenset()
    repair_at: float = 0.0

    def owes(self) -> dict[Reason, frozenset[str]]:
        """Everything owed now, by reason (a CatchUp only to a kind that owes one, A1; a Repair
        likewise, W1)."""
        owed: dict[Reason, frozenset[str]] = {}
        if self.foreign_commit and self.foreign_uids:
            owed["ForeignCommit"] = self.foreign_uids
        if self.refusals:
            owed["Refusal"] = self.refusals
        if self.catch_up and self.catch_up_uids and catches_up(self.kind):
            owed["CatchUp"] = self.catch_up_uids
        if self.repairs and gets_repairs(self.kind):
            owed["Repair"] = self.repairs
        return owed

    def worth_keeping(self) -> bool:
        """Whether the record says anything an empty one would not (otherwise: no key)."""
        return bool(self.owes() or self.attempt or self.failures)

    def to_json(self) -> str:
        """Stable JSON (sorted keys and uids), so an unchanged record encodes unchanged."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "foreign_commit": self.foreign_commit,
            "foreign_uids": sorted(self.foreign_uids),
            "refusals": sorted(self.refusals),
            "refused_again": sorted(self.refused_again),
            "catch_up": self.catch_up,
            "catch_up_uids": sorted(self.catch_up_uids),
            "failures": self.failures,
            "next_try_at": self.next_try_at,
            "quiet_periods": dict(sorted(self.quiet_periods.items())),
            "repairs": sorted(self.repairs),
            "repaired_again": sorted(self.repaired_again),
            "repair_at": self.repair_at,
            "attempt": None if self.attempt is None else self.attempt.to_data(),
        }
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Applier:
        """The inverse of ``to_json``."""
        data = json.loads(text)
        raw = data.get("attempt")
        return cls(
            kind=data["kind"],
            foreign_commit=data["foreign_commit"],
            foreign_uids=frozenset(data["foreign_uids"]),
            refusals=frozenset(data["refusals"]),
            refused_again=frozenset(data.get("refused_again", ())),
            catch_up=data["catch_up"],
            catch_up_uids=frozenset(data["catch_up_uids"]),
            attempt=Attempt.from_data(raw) if raw else None,
            failures=data["failures"],
            next_try_at=data["next_try_at"],
            quiet_periods=dict(data["quiet_periods"]),
            repairs=frozenset(data.get("repairs", ())),
            repaired_again=frozenset(data.get("repaired_again", ())),
            repair_at=float(data.get("repair_at", 0.0)),
        )
