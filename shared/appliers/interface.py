"""What every applier kind offers: check it (S2), ask it once (D4), see it finish (D6).

The watcher and the dispatcher talk to an applier only through these types, so a new kind
(Argo CD, a webhook) is one module that fills them in, and neither service learns its objects.
An attempt runs in three steps with the dispatcher's own D3 check between the first two:

1. ``ApplierAdapter.read`` fetches the applier's objects for one request and either refuses
   (``Refused``: not found, follows another source, not supported), finds it busy (``Busy``:
   an Argo CD operation is running; the dispatcher reads again until its deadline) or returns
   a ``Pending``;
2. ``Pending.request`` stamps the applier (``Sent``), finds it holds the commit already
   (``Unneeded``), finds it changed since the read (``Busy``, then read and decide again), or
   is turned down by it (``Refused``: a webhook answered non-2xx, D7);
3. ``Sent.handled`` says whether the applier has finished that request; the dispatcher polls it
   until its deadline.

Every method may raise ``shared.kube.errors.KubeError``; the caller turns it into an outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from shared.decide.applier_check import Subject
from shared.decide.conditions import Wanted
from shared.kube.api import KubeClient
from shared.model.appliers import Reason
from shared.model.requests import ApplyRequest


@dataclass(frozen=True, slots=True)
class Refused:
    """The applier cannot be asked for this request; ``message`` says why (it fails the
    attempt, so it starts with the ApplierConfigured reason when there is one)."""

    message: str


@dataclass(frozen=True, slots=True)
class Unneeded:
    """Nothing had to be stamped: the applier already holds the commit (Delivered at once)."""

    message: str


@dataclass(frozen=True, slots=True)
class Busy:
    """The applier cannot be asked yet (D5): it runs an operation we must not replace, or
    (``conflict``) it changed between our read and our write (409). Either way the dispatcher
    reads it again and decides again: after a pause until its deadline, or at once a bounded
    number of times for a conflict."""

    message: str
    conflict: bool = False


class Sent(Protocol):
    """A request the applier has received (it was stamped)."""

    @property
    def plan(self) -> str:
        """What was stamped, for people (Events, outcome messages), e.g. ``stamp-source``; once
        ``handled`` said True it may also say what the applier made of it (Argo CD's phase)."""
        ...

    def handled(self) -> bool:
        """D6: the applier has finished this request (reads the applier again)."""
        ...


class Pending(Protocol):
    """The applier's objects for one request, read just now and found to follow our branch."""

    def request(self, reasons: Iterable[Reason], token: str) -> Sent | Unneeded | Busy | Refused:
        """D4: stamp the one object that makes the applier apply the commit, or nothing; a
        request the applier turns down at once is ``Refused`` (Failed, D7)."""
        ...


class ApplierAdapter(Protocol):
    """One applier kind (``spec.applier`` names one object of it)."""

    @property
    def kind(self) -> str:
        """The object kind a GitTarget names, as in ``ApplierRef.kind``."""
        ...

    @property
    def product(self) -> str:
        """The tool's name for people: ``Flux``, ``Argo CD``."""
        ...

    def validate(self, client: KubeClient, subject: Subject, min_interval_s: float) -> Wanted:
        """S2 ApplierConfigured: read the applier's objects, then ask SelfSubjectAccessReviews
        only once everything else holds. ``min_interval_s`` bounds how often a source may
        fetch on its own (kinds without such a source ignore it)."""
        ...

    def read(self, client: KubeClient, request: ApplyRequest) -> Pending | Refused | Busy:
        """The applier's objects for ``request`` (D4's first half), or why it cannot be asked."""
        ...
