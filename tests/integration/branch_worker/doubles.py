"""Small stand-ins for the branch loop's collaborators a test does not exercise: every one is
required by ``BranchLoop``, so a test says which it leaves out by handing in one of these."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from services.branch_worker.attribution import Wait
from shared.model.attribution import Author
from shared.model.commit_requests import CommitRequestItem
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.store.leases import Lease
from shared.store.streams import StreamEntry


class AdmitEverything:
    """No apply window: every object event is mirrored (``Admission``)."""

    def __init__(self) -> None:
        self.asked = 0

    def is_tie(self, target: TargetConfig, event: ObjectEvent) -> bool:
        return False

    def admits(
        self,
        target: TargetConfig,
        event: ObjectEvent,
        older_only: Callable[[], bool] = lambda: False,
        unchanged: Callable[[], bool] = lambda: False,
        audit_user: str | None = None,
    ) -> bool:
        self.asked += 1
        return True


class NoRequests:
    """No CommitRequest binds (``Requests``): each request entry is acknowledged at once."""

    def __init__(self) -> None:
        self.received: list[CommitRequestItem] = []

    def receive(self, lease: Lease, request: CommitRequestItem, window: object, tip: str) -> bool:
        self.received.append(request)
        return False

    def overdue(self, lease: Lease, problem: str, held: Collection[str] = ()) -> None:
        raise AssertionError("no request is bound, so none can be overdue")

    def next_failure(self) -> float | None:
        return None

    def finished(
        self,
        lease: Lease,
        pushed: Sequence[tuple[Sequence[CommitRequestItem], str | None]],
        head: str,
    ) -> None:
        assert not pushed, "no request is bound, so no pushed window holds one"


class NoAttribution:
    """Attribution off (``Attribution``): every write is authored by the committer."""

    def seen(self, backlog: Iterable[StreamEntry]) -> None:
        pass

    def new_pass(self) -> None:
        pass

    def author(
        self, target: TargetConfig, entry_id: str, event: ObjectEvent
    ) -> Author | Wait | None:
        return None

    def submitter(
        self, target: TargetConfig, entry_id: str, request: CommitRequestItem
    ) -> Author | Wait | None:
        return None

    def writer(self, target: TargetConfig, event: ObjectEvent) -> str | None:
        return None

    def waiting_until(self) -> float | None:
        return None

    def clear_waits(self) -> None:
        pass
