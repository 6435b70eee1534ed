"""The product configured with Flux as docs/flux.md says, and what a sample reads of its state.

``bench.apply_trigger`` times requests to Flux; this module sets the product up for it (the
GitProvider's GitHub receiver hooked to the Git host, a GitTarget with a Kustomization applier,
a GitRepository that never fetches on its own) and reads, cheaply and without changing
anything, where a request got to: the notice stream, rq's job record, the branch's published
state, the applier's obligations, the ledger and the Kustomization's status.
"""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from rq.exceptions import NoSuchJobError
from rq.job import Job

from bench.product import (
    NS,
    SETUP_TIMEOUT_S,
    SLOW_POLL_S,
    TOKEN,
    ConfigMapEditor,
    Repo,
    configure,
    flux_objects,
    provider,
    repository,
    target,
    wait_for,
)
from bench.stamps import StampWatch
from sandbox.githost.outside import environment, git
from shared.model.config import ApplierRef
from shared.model.ids import GitTargetUid
from shared.model.notices import PushNotice
from shared.settings import Settings
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts, job_id
from shared.store.branch_state import BranchStates
from shared.store.connection import connect
from shared.store.ledger import Ledger
from shared.store.streams import EventStream
from tests.e2e.system import GROUP, System

QUIET_PERIOD_S = 2.0
#: Longest wait for one stamp or one settling: far above a sample (a few seconds).
STEP_TIMEOUT_S = 60.0
APPLIER = ApplierRef("Kustomization", NS, "apps", "default")


class Rig:
    """The configured product, its repository, and the reads a sample needs.

    ``applier`` is the GitTarget's applier; a rig for another applier (``bench.argocd``)
    names its own and says what ``applied`` means for it.
    """

    applier = APPLIER

    def __init__(self, system: System, repo: Repo, stamps: StampWatch, scratch: Path) -> None:
        self.system = system
        self.repo = repo
        self.stamps = stamps
        settings = Settings.from_env()
        client = connect(settings.redis_url, "bench")
        self._redis: redis.Redis = client
        self._states = BranchStates(client, repo.keys)
        self._events = EventStream(client, repo.keys)
        self._appliers = ApplierStore(client, repo.keys)
        self._ledger = Ledger(client, repo.keys)
        self._rq = Attempts(client, repo.keys, settings.apply_queue).queue().connection
        self._uid = GitTargetUid(self._get("gittargets", "apps", GROUP)["metadata"]["uid"])
        self._clone = scratch / "outside"
        git("clone", "-q", repo.url, str(self._clone), cwd=scratch)
        self.configmap = ConfigMapEditor(system, "bench")

    def _get(self, plural: str, name: str, group: str) -> dict[str, Any]:
        version = "v1alpha1" if group == GROUP else "v1"
        return self.system.get(group, version, NS, plural, name)

    def push_outside(self, i: int) -> tuple[str, float]:
        """Someone else commits a file outside our folder and pushes; the commit, when pushed.

        "When pushed" is when the bare repository's ref moves, watched while ``git push`` runs:
        the Git host queues its webhook before it answers the push, so the command's own
        return comes later than the notice can.
        """
        self._commit_outside(i)
        old = self.repo.tip()
        with subprocess.Popen(
            ["git", "push", "-q", "origin", "HEAD:main"],
            cwd=self._clone,
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as push:
            commit = self.repo.wait_for_new_tip(old, STEP_TIMEOUT_S)
            pushed_at = time.time()  # the Git host accepted it: the ref moved
            if push.wait(STEP_TIMEOUT_S) != 0:
                raise RuntimeError("bench: the outside push failed")
        return commit, pushed_at

    def _commit_outside(self, i: int) -> None:
        """A commit on the current tip changing a file outside the GitTarget's folder."""
        git("fetch", "-q", "origin", cwd=self._clone)
        git("reset", "-q", "--hard", "origin/main", cwd=self._clone)
        (self._clone / "notes").mkdir(exist_ok=True)
        (self._clone / "notes" / "outside.txt").write_text(f"outside change {i}\n")
        git("add", "-A", cwd=self._clone)
        git("commit", "-qm", f"outside change {i}", cwd=self._clone)

    def notice_received_at(self, commit: str) -> float | None:
        """When the receiver stored the notice naming ``commit`` (None if it is not there)."""
        key = self.repo.keys.branch_notices(self.repo.branch_key)
        entries: Any = self._redis.xrevrange(key, count=20)
        for _entry, fields in entries:
            notice = PushNotice.from_fields(fields)
            if notice.after == commit:
                return notice.received_at
        return None

    def job_times(self, token: str | None) -> tuple[float, float] | None:
        """When the request with ``token`` was enqueued and when a dispatcher started it."""
        try:
            job = Job.fetch(job_id(token or ""), connection=self._rq)
        except NoSuchJobError:
            return None
        if job.enqueued_at is None or job.started_at is None:
            return None
        return _epoch(job.enqueued_at), _epoch(job.started_at)

    def last_write_at(self) -> float:
        return self._states.read(self.repo.branch_key).last_write_at

    def settle(self, commit: str) -> str:
        """Wait until the request for ``commit`` is finished and nothing else is under way.

        Returns the request's reasons and outcome as the ledger recorded them.
        """
        outcome = wait_for(
            "the request's outcome", lambda: self._outcome(commit), STEP_TIMEOUT_S, SLOW_POLL_S
        )
        wait_for(
            "the applier to apply it", lambda: self.applied(commit), STEP_TIMEOUT_S, SLOW_POLL_S
        )
        self.wait_quiet()
        return outcome

    def _outcome(self, commit: str) -> str | None:
        last, _ = self._ledger.last_request(self._uid)
        if last is None or last.commit != commit:
            return None
        return f"{'+'.join(last.reasons)} {last.outcome}"

    def applied(self, commit: str) -> bool:
        """The Kustomization applied ``commit``."""
        status = self._get("kustomizations", "apps", "kustomize.toolkit.fluxcd.io").get("status")
        return str((status or {}).get("lastAppliedRevision", "")).endswith(commit)

    def wait_quiet(self) -> None:
        """Wait until a branch worker has observed the remote tip and nothing is under way."""
        wait_for("a quiet branch", self._quiet, STEP_TIMEOUT_S, SLOW_POLL_S)

    def _quiet(self) -> bool:
        bk = self.repo.branch_key
        state = self._states.read(bk)
        applier = self._appliers.load(self.applier.key, self.applier.kind)
        busy = state.windows_open or state.push_in_flight or state.pending_total
        idle = not (busy or self._events.pending_count(bk) or applier.attempt or applier.owes())
        return idle and state.observed_tip == self.repo.tip()


def _epoch(at: datetime) -> float:
    """rq's UTC timestamps as ``time.time()`` values."""
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def set_up(system: System) -> Repo:
    """The objects of docs/flux.md, and the Git host's webhook pointed at the receiver."""
    repo = repository(system, "flux")
    quiet = f"{QUIET_PERIOD_S:.0f}s"
    configure(system, [provider(repo.url, "0s", receiver=True), target(quiet)])
    for body in flux_objects(repo.url):
        system.create(body)
    path = wait_for("the receiver's webhook path", lambda: webhook_path(system), SETUP_TIMEOUT_S)
    system.hook(repo.name, path, "github", "json", TOKEN)
    wait_for("ApplierConfigured=True", lambda: configured(system), SETUP_TIMEOUT_S, SLOW_POLL_S)
    return repo


def webhook_path(system: System) -> str | None:
    found = system.get(GROUP, "v1alpha1", NS, "gitproviders", "bench")
    path = ((found.get("status") or {}).get("receiver") or {}).get("webhookPath")
    return str(path) if path else None


def configured(system: System) -> bool:
    found = system.get(GROUP, "v1alpha1", NS, "gittargets", "apps")
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c["type"] == "ApplierConfigured" and c["status"] == "True" for c in conditions)
