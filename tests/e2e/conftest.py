"""Fixtures the e2e modules share: whole systems per module, and one tenant per test.

A system (sandbox plus every process of the Procfile, ``tests/e2e/system.py``) takes a few
seconds to start, so a module starts the ones it needs once (``launcher``) with its own key
prefix and rq queue on the test Redis. Tests stay independent by each making a *tenant*: its
own namespace, repository, GitProvider, GitTarget and WatchRule (``Tenants.make``), so no test
sees another's objects, branch or commits.
"""

from __future__ import annotations

import base64
import signal
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from _pytest.nodes import Item
from _pytest.runner import CallInfo
from kubernetes import watch
from kubernetes.client import V1ObjectMeta, V1Secret
from rq.job import Job

from sandbox.flux.activity import ActivityLog
from sandbox.flux.pacing import Pacing
from sandbox.stack import Identities
from shared.decide.bootstrap import BOOTSTRAP_FILES
from shared.kube.flux import REQUESTED_AT
from shared.model.appliers import Applier
from shared.model.config import ApplierRef
from shared.model.ids import Branch, BranchKey, GitTargetUid
from shared.model.requests import ApplyRequest
from shared.settings import Settings
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts
from shared.store.branch_state import BranchState, BranchStates
from shared.store.connection import connect
from shared.store.keys import Keys
from shared.store.watches import WatchAddress, WatchState
from tests.e2e.system import ALL, GROUP, RUNNING_LOGS, System, git, run_system_as
from tests.helpers import wait_until

VERSION = "v1alpha1"
#: A WatchRule rule selecting ConfigMaps (the core group is ``""``).
CONFIGMAPS: dict[str, Any] = {"apiGroups": [""], "resources": ["configmaps"]}
#: Bound on every wait for another process (the brief's ceiling is 60 s).
WAIT_S = 45.0
#: How long a stopped process may take to finish the work in hand (SIGTERM, conventions 10).
STOP_S = 30.0


@pytest.fixture(scope="module")
def e2e_redis() -> Iterator[redis.Redis]:
    """The test Redis (``GITOPS_REVERSER_REDIS_URL``), for the whole module."""
    client = connect(Settings.from_env().redis_url, client_name="e2e-tests")
    try:
        client.ping()
    except redis.ConnectionError as err:
        pytest.fail(f"e2e tests need Redis (run them with scripts/with-redis): {err}")
    yield client
    client.close()


class Launcher:
    """Starts systems for one module and stops them (and drops their keys) at its end, on the
    test Redis or the one at ``redis_url`` (``client`` must reach the same); the Flux doubles
    run with ``flux_pacing`` (default: no pauses, as run_system_as says) and the processes
    with ``commands`` (default: the Procfile's)."""

    def __init__(
        self,
        root: Path,
        client: redis.Redis,
        redis_url: str | None = None,
        *,
        flux_pacing: Pacing | None = None,
        commands: Mapping[str, str] | None = None,
    ) -> None:
        self._root = root
        self._flux_pacing = flux_pacing
        self._commands = commands
        self._client = client
        self._redis_url = redis_url or Settings.from_env().redis_url
        self._running: list[tuple[Iterator[System], str]] = []

    def start(
        self,
        identities: Identities | None = None,
        *,
        commands: Mapping[str, str] | None = None,
        **settings: str,
    ) -> System:
        """A running system with a fresh key prefix and rq queue; ``identities`` and
        ``settings`` as run_system's, ``commands`` the processes' (default: the launcher's;
        ``tests.e2e.window_off_worker.WINDOW_OFF`` runs a branch worker without the window).

        The ClusterProvider ``default`` admits every namespace (docs/crds.md: ``selector: {}``).
        """
        prefix = f"test:e2e:{uuid.uuid4().hex[:10]}"
        values = {"key_prefix": prefix, "apply_queue": f"{prefix}:apply", **settings}
        directory = self._root / prefix.rsplit(":", 1)[1]
        runner = run_system_as(
            identities,
            directory,
            self._redis_url,
            ALL,
            values,
            flux_pacing=self._flux_pacing,
            commands=commands or self._commands,
        )
        system = next(runner)
        self._running.append((runner, prefix))
        system.create(
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "ClusterProvider",
                "metadata": {"name": "default"},
                "spec": {"accessFrom": {"selector": {}}},
            }
        )
        return system

    def stop_all(self) -> None:
        for runner, prefix in reversed(self._running):
            for _ in runner:  # run_system's finally: processes and sandbox stopped
                pass
            stale = list(self._client.scan_iter(f"{prefix}:*"))
            if stale:
                self._client.delete(*stale)
        self._running.clear()


@pytest.fixture(scope="module")
def launcher(
    tmp_path_factory: pytest.TempPathFactory, e2e_redis: redis.Redis
) -> Iterator[Launcher]:
    """Start systems with ``launcher.start(steady_tick=..., ...)``; all stop after the module."""
    running = Launcher(tmp_path_factory.mktemp("e2e"), e2e_redis)
    try:
        yield running
    finally:
        running.stop_all()


def keys_of(system: System) -> Keys:
    """The Redis keys of a system's processes."""
    return Keys(system.env["GITOPS_REVERSER_KEY_PREFIX"])


def stop_process(system: System, name: str) -> None:
    """SIGTERM one process of the Procfile (its whole session, as Processes.stop does)."""
    system.procs.signal(name, signal.SIGTERM, STOP_S)


@dataclass
class Tenant:
    """One test's namespace, repository, GitProvider ``gp``, GitTarget ``gt`` and WatchRule."""

    system: System
    client: redis.Redis
    namespace: str
    repo: str
    url: str
    path: str
    keys: Keys = field(init=False)

    def __post_init__(self) -> None:
        self.keys = keys_of(self.system)

    @property
    def bk(self) -> BranchKey:
        return Branch(self.url, "main").key

    @property
    def bare(self) -> Path:
        return self.system.bare(self.repo)

    def tip(self) -> str:
        return self.system.tip(self.repo)

    def git(self, *args: str) -> str:
        """git run in the bare repository on the host."""
        return git(*args, cwd=self.bare)

    def commits_since(self, base: str) -> list[str]:
        """Commits on main after ``base``, oldest first."""
        return self.git("rev-list", "--reverse", f"{base}..main").split()

    def changed(self, commit: str) -> list[str]:
        """Paths one commit changed."""
        return self.git("diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()

    def bootstrap_paths(self) -> list[str]:
        """The bootstrap files the first write to the folder adds beside the object (P4)."""
        return sorted(f"{self.path}/{b.name}" for b in BOOTSTRAP_FILES)

    def changed_objects(self, commit: str) -> list[str]:
        """Paths of object documents one commit changed (the bootstrap files left out)."""
        return [p for p in self.changed(commit) if p not in self.bootstrap_paths()]

    def show(self, path: str, rev: str = "main") -> str:
        return self.git("show", f"{rev}:{path}")

    def files(self, rev: str = "main") -> list[str]:
        return self.git("ls-tree", "-r", "--name-only", rev).split()

    def state(self) -> BranchState:
        """The branch's published state, as the dispatcher and inspect read it."""
        return BranchStates(self.client, self.keys).read(self.bk)

    def target(self) -> dict[str, Any]:
        return self.system.get(GROUP, VERSION, self.namespace, "gittargets", "gt")

    def provider(self) -> dict[str, Any]:
        return self.system.get(GROUP, VERSION, self.namespace, "gitproviders", "gp")

    def condition(self, kind: str) -> dict[str, Any] | None:
        """The GitTarget's condition of type ``kind``, if it has one."""
        for cond in self.target().get("status", {}).get("conditions", []):
            if cond.get("type") == kind:
                found: dict[str, Any] = cond
                return found
        return None

    def wait_condition(self, kind: str, status: str) -> dict[str, Any]:
        """Wait until the GitTarget's ``kind`` condition has ``status``; returns it."""
        wait_until(
            lambda: (self.condition(kind) or {}).get("status") == status,
            WAIT_S,
            f"{self.namespace}/gt {kind}={status}",
        )
        found = self.condition(kind)
        assert found is not None
        return found

    def wait_tip_moved(self, base: str) -> str:
        """Wait until main moves past ``base``; returns the new tip."""
        wait_until(lambda: self.tip() != base, WAIT_S, f"a commit on {self.repo} after {base[:8]}")
        return self.tip()

    def wait_watching(self, group_resource: str) -> None:
        """Wait until the watcher listed ``group_resource`` in the tenant's namespace for the
        GitTarget (M1: its cursor is stored once the list is published), so an edit made from
        now on reaches the branch as its own event, not folded into a later list."""
        uid = GitTargetUid(str(self.target()["metadata"]["uid"]))
        at = WatchAddress(uid, group_resource, self.namespace)
        state = WatchState(self.client, self.keys)
        wait_until(
            lambda: state.cursor(at) is not None,
            WAIT_S,
            f"the watch of {group_resource} in {self.namespace}",
        )

    def wait_owned(self) -> None:
        """Wait until a branch worker owns the branch and observed its tip (it took it)."""
        wait_until(
            lambda: self.state().observed_tip == self.tip(),
            WAIT_S,
            f"a branch worker to take {self.repo}'s main",
        )


class Tenants:
    """Makes tenants in one system."""

    def __init__(self, system: System, client: redis.Redis) -> None:
        self.system = system
        self._client = client

    def make(
        self,
        name: str,
        *,
        commit_window: str = "1s",
        rules: list[dict[str, Any]] | None = None,
        receiver: dict[str, Any] | None = None,
        target_spec: dict[str, Any] | None = None,
        files: dict[str, bytes] | None = None,
        before_target: Callable[[str], None] | None = None,
    ) -> Tenant:
        """Namespace and repository ``name``; GitTarget ``gt`` writes ``clusters/<name>``.

        ``rules`` is the WatchRule's (none: no WatchRule); ``receiver`` the GitProvider's
        ``spec.receiver``; ``target_spec`` is merged into the GitTarget's spec;
        ``before_target`` runs with the repository's URL just before the GitTarget is made.
        """
        system = self.system
        system.namespace(name)
        url = system.repo(name, files)
        path = f"clusters/{name}"
        provider: dict[str, Any] = {
            "url": url,
            "allowedBranches": ["main"],
            "push": {"commitWindow": commit_window},
        }
        if receiver is not None:
            provider["receiver"] = receiver
        self._create(name, "GitProvider", "gp", provider)
        if before_target is not None:
            before_target(url)
        spec = {"providerRef": {"name": "gp"}, "branch": "main", "path": path}
        self._create(name, "GitTarget", "gt", {**spec, **(target_spec or {})})
        if rules is not None:
            self._create(name, "WatchRule", "wr", {"targetRef": {"name": "gt"}, "rules": rules})
        return Tenant(system, self._client, name, name, url, path)

    def secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        body = V1Secret(
            metadata=V1ObjectMeta(name=name, namespace=namespace),
            data={k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        )
        self.system.core.create_namespaced_secret(namespace, body)

    def _create(self, namespace: str, kind: str, name: str, spec: dict[str, Any]) -> None:
        self.system.create(
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            }
        )


# --- Flux appliers (issue 5): a tenant whose GitTarget names a Kustomization -----------------

#: Timings of a system for the apply trigger: a branch reads its tip every 4s without a webhook
#: (Q7), the watcher reconciles every second and publishes status.applier within a second (O6),
#: and a request out for 10s is handed back (A4; the product's default is 330s).
FLUX_SETTINGS = {
    "steady_tick": "4s",
    "reconcile_period": "1s",
    "lease_period": "3s",
    "applier_status_period": "1s",
    "attempt_deadline": "10s",
}
WEBHOOK_TOKEN = "e2e-webhook-token"
SOURCES = ("source.toolkit.fluxcd.io", "v1", "gitrepositories")
KUSTOMIZATIONS = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")


def _applied(system: System, ns: str, commit: str) -> bool:
    """The Kustomization ``ks`` in ``ns`` applied ``commit`` (facts F2, F3)."""
    found = system.get(*KUSTOMIZATIONS[:2], ns, KUSTOMIZATIONS[2], "ks")
    status = found.get("status", {})
    return str(status.get("lastAppliedRevision", "")).endswith(f"sha1:{commit}")


def kill_process(system: System, name: str) -> None:
    """SIGKILL one process of the Procfile (its whole session): it reports nothing more."""
    system.procs.signal(name, signal.SIGKILL, STOP_S)


def start_process(system: System, name: str) -> None:
    """Start one process of the Procfile again (after ``stop_process`` or ``kill_process``)."""
    system.procs.start((name,))


@dataclass(frozen=True, slots=True)
class Sent:
    """One apply request as the apply queue keeps it (D1: one rq job per token)."""

    token: str
    commit: str
    reasons: dict[str, list[str]]
    sent_at: float
    outcome: str | None  # the job's result: None while queued or running, or if it died
    ended_at: float | None = None  # when the job finished (epoch seconds), None until then


def sent_requests(system: System, client: redis.Redis) -> list[tuple[tuple[str, str], Sent]]:
    """Every request on the system's apply queue, oldest first, keyed by (namespace, name) of
    its applier: the queued, running, finished and failed jobs."""
    queue = Attempts(client, keys_of(system), system.env["GITOPS_REVERSER_APPLY_QUEUE"]).queue()
    ids = set(queue.job_ids)
    for registry in (queue.started_job_registry, queue.finished_job_registry):
        ids |= {job_id.split(":")[0] for job_id in registry.get_job_ids()}
    ids |= set(queue.failed_job_registry.get_job_ids())
    found = []
    for job in Job.fetch_many(sorted(ids), connection=queue.connection):
        if job is not None:
            request = ApplyRequest.from_json(str(job.args[0]))
            outcome = job.return_value() if job.is_finished else None
            reasons = {str(reason): uids for reason, uids in request.reasons.items()}
            ended = _epoch(job.ended_at) if job.is_finished else None
            sent = Sent(request.token, request.commit, reasons, request.sent_at, outcome, ended)
            found.append(((request.applier.namespace, request.applier.name), sent))
    return sorted(found, key=lambda pair: pair[1].sent_at)


def _epoch(moment: datetime | None) -> float | None:
    """An rq timestamp (UTC, naive in some rq versions) as epoch seconds."""
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@dataclass
class ApplierTenant:
    """A tenant whose GitTarget names an applier (``applier``): what was asked of it, what it
    is owed, and what the product published about it."""

    tenant: Tenant
    uid: str

    @property
    def ns(self) -> str:
        return self.tenant.namespace

    @property
    def system(self) -> System:
        return self.tenant.system

    @property
    def applier(self) -> ApplierRef:
        raise NotImplementedError

    def push(self, files: dict[str, str], message: str = "outside change") -> str:
        """Someone else pushes ``files`` (paths from the repository root); the new commit."""
        return self.system.push(self.tenant.repo, files, message)

    def requests(self) -> list[Sent]:
        """Every request sent to this tenant's applier, oldest first."""
        pairs = sent_requests(self.system, self.tenant.client)
        key = (self.applier.namespace, self.applier.name)
        return [sent for found, sent in pairs if found == key]

    def obligations(self) -> Applier:
        """What the applier is owed and the attempt out (the branch worker's record)."""
        store = ApplierStore(self.tenant.client, self.tenant.keys)
        return store.load(self.applier.key, self.applier.kind)

    def applier_status(self, target: str = "gt") -> dict[str, Any]:
        """``status.applier`` of a GitTarget (S3), or {} before the watcher wrote it."""
        found = self.system.get(GROUP, VERSION, self.ns, "gittargets", target)
        status: dict[str, Any] = found.get("status", {}).get("applier", {})
        return status

    def last_request(self, target: str = "gt") -> dict[str, Any]:
        """``status.applier.lastRequest`` of a GitTarget, or {} when it has none."""
        return dict(self.applier_status(target).get("lastRequest", {}))

    def events_handled(self) -> int:
        """How many object events the watcher published for the branch, once its owner read
        and acknowledged all of them (M8); -1 while some are not."""
        redis_client, key = self.tenant.client, self.tenant.keys.branch_events(self.tenant.bk)
        if not redis_client.exists(key):
            return 0
        stream: dict[str, Any] = redis_client.xinfo_stream(key)
        groups: list[dict[str, Any]] = redis_client.xinfo_groups(key)
        done = bool(groups) and groups[0]["pending"] == 0
        done = done and groups[0]["last-delivered-id"] == stream["last-generated-id"]
        return int(stream["entries-added"]) if done else -1

    def notices(self) -> list[str]:
        """The ``after`` of every push notice the receiver stored for the branch (R4)."""
        key = self.tenant.keys.branch_notices(self.tenant.bk)
        entries: list[tuple[str, dict[str, str]]] = self.tenant.client.xrange(key)  # type: ignore[assignment]
        return [fields.get("after", "") for _, fields in entries]

    def events(self) -> list[tuple[str, str]]:
        """(GitTarget name, message) of every ApplyRequested Event in the namespace (S4)."""
        found = self.system.core.list_namespaced_event(self.ns).items
        return [
            (str(e.involved_object.name), str(e.message))
            for e in found
            if e.reason == "ApplyRequested" and e.involved_object.kind == "GitTarget"
        ]


@dataclass
class FluxTenant(ApplierTenant):
    """A tenant whose GitTarget ``gt`` names the Kustomization ``ks``, which applies
    ``./clusters`` of the GitRepository ``src`` (interval 24h: it never fetches on its own)."""

    @property
    def applier(self) -> ApplierRef:
        return ApplierRef("Kustomization", self.ns, "ks", "default")

    @property
    def flux_log(self) -> ActivityLog:
        """What the sandbox's Flux doubles did, in order."""
        controllers = self.system.sbx.flux
        assert controllers is not None, "the sandbox runs without its Flux doubles"
        return controllers.log

    def kustomization(self) -> dict[str, Any]:
        return self.system.get(*KUSTOMIZATIONS[:2], self.ns, KUSTOMIZATIONS[2], "ks")

    def source(self) -> dict[str, Any]:
        return self.system.get(*SOURCES[:2], self.ns, SOURCES[2], "src")

    def patch_source(self, spec: dict[str, Any]) -> None:
        self.system.custom.patch_namespaced_custom_object(
            *SOURCES[:2], self.ns, SOURCES[2], "src", {"spec": spec}
        )

    def patch_kustomization(self, spec: dict[str, Any]) -> None:
        self.system.custom.patch_namespaced_custom_object(
            *KUSTOMIZATIONS[:2], self.ns, KUSTOMIZATIONS[2], "ks", {"spec": spec}
        )

    def applied(self, commit: str) -> bool:
        """Flux applied ``commit``: the Kustomization's lastAppliedRevision (facts F2, F3)."""
        return _applied(self.system, self.ns, commit)

    def stamps(self, since: str) -> list[tuple[str, str]]:
        """(kind, requestedAt) of every change to the Kustomization and the GitRepository
        after resourceVersion ``since``, read from the API's watch history (facts F1)."""
        seen: list[tuple[str, str]] = []
        for group, version, plural in (SOURCES, KUSTOMIZATIONS):
            stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                self.system.custom.list_namespaced_custom_object,
                group,
                version,
                self.ns,
                plural,
                resource_version=since,
                timeout_seconds=1,
            )
            for event in stream:
                meta = event["object"].get("metadata", {})
                value = (meta.get("annotations") or {}).get(REQUESTED_AT)
                if value:
                    seen.append((event["object"].get("kind", ""), str(value)))
        return seen

    def resource_version(self) -> str:
        """The API's current resourceVersion (a point to read the watch history from)."""
        listed: dict[str, Any] = self.system.custom.list_namespaced_custom_object(  # type: ignore[assignment]
            *KUSTOMIZATIONS[:2], self.ns, KUSTOMIZATIONS[2]
        )
        return str(listed["metadata"]["resourceVersion"])


class FluxTenants(Tenants):
    """Makes tenants with a Flux applier, as docs/flux.md sets one up."""

    def make_flux(
        self,
        name: str,
        *,
        receiver: bool = True,
        quiet: str = "2s",
        on_refusal: str = "None",
        rules: list[dict[str, Any]] | None = None,
        files: dict[str, str] | None = None,
        suspend: bool = False,
        follows: str = "main",
        commit_window: str = "1s",
        encryption: dict[str, Any] | None = None,
        decryption: dict[str, Any] | None = None,
        prune: bool = False,
    ) -> FluxTenant:
        """A tenant (``Tenants.make``) plus, when ``receiver``, a GitHub receiver whose hook
        the Git host calls; the GitTarget's applier; and Flux's GitRepository (following
        ``follows``) and Kustomization (``prune`` as docs/flux.md sets it, when asked).
        Returns once a worker owns the branch and, unless suspended or mismatched, Flux
        applied the first commit with ApplierConfigured True.
        ``encryption`` is the GitTarget's ``spec.encryption``, ``decryption`` the
        Kustomization's ``spec.decryption`` (P3).

        Flux's objects are made before the GitTarget, and (following ``main``) the GitTarget
        only once Flux applied the repository's first commit: the branch's first owner then
        finds the Kustomization at the tip and owes nothing (issue 23, finding 12), so each test
        counts only the requests it causes. A suspended Kustomization is suspended after that
        first apply."""
        applier = {"kustomizationRef": {"name": "ks", "namespace": name}, "quietPeriod": quiet}

        def flux_first(url: str) -> None:
            self._flux(name, url, follows, suspend=False, decryption=decryption, prune=prune)
            if follows != "main":
                return
            tip = self.system.tip(name)
            first = f"Flux's first apply in {name}"
            wait_until(lambda: _applied(self.system, name, tip), WAIT_S, first)
            if suspend:
                self.system.custom.patch_namespaced_custom_object(
                    *KUSTOMIZATIONS[:2], name, KUSTOMIZATIONS[2], "ks", {"spec": {"suspend": True}}
                )

        tenant = self.make(
            name,
            commit_window=commit_window,
            rules=rules or [CONFIGMAPS],
            receiver={"type": "github", "secretRef": {"name": "webhook"}} if receiver else None,
            target_spec={
                "onRefusal": on_refusal,
                "applier": applier,
                **({"encryption": encryption} if encryption else {}),
            },
            files={
                "README.md": b"e2e\n",
                f"clusters/{name}/README.md": b"The folder of GitTarget gt.\n",
                **{p: t.encode() for p, t in (files or {}).items()},
            },
            before_target=flux_first,
        )
        if receiver:
            self.secret(name, "webhook", {"token": WEBHOOK_TOKEN})
        found = tenant.target()
        flux = FluxTenant(tenant, str(found["metadata"]["uid"]))
        tenant.wait_owned()
        if receiver:
            self._hook(tenant)
        if not suspend and follows == "main":
            tip = tenant.tip()
            wait_until(lambda: flux.applied(tip), WAIT_S, f"Flux's first apply in {name}")
            tenant.wait_condition("ApplierConfigured", "True")
        return flux

    def make_hooked(self, name: str) -> ApplierTenant:
        """A tenant (``Tenants.make``) mirroring ConfigMaps, with no applier, whose GitHub
        receiver the Git host calls on every push; returns once a worker owns its branch."""
        tenant = self.make(
            name, rules=[CONFIGMAPS], receiver={"type": "github", "secretRef": {"name": "webhook"}}
        )
        self.secret(name, "webhook", {"token": WEBHOOK_TOKEN})
        tenant.wait_owned()
        self._hook(tenant)
        return ApplierTenant(tenant, str(tenant.target()["metadata"]["uid"]))

    def add_target(self, flux: FluxTenant, name: str, quiet: str, rule: dict[str, Any]) -> str:
        """Another GitTarget (and WatchRule) ``name`` on ``clusters/<ns>-<name>`` naming the
        same Kustomization; its uid."""
        ns = flux.ns
        applier = {"kustomizationRef": {"name": "ks", "namespace": ns}, "quietPeriod": quiet}
        spec = {"providerRef": {"name": "gp"}, "branch": "main", "applier": applier}
        self._create(ns, "GitTarget", name, {**spec, "path": f"clusters/{ns}-{name}"})
        self._create(ns, "WatchRule", name, {"targetRef": {"name": name}, "rules": [rule]})
        found = self.system.get(GROUP, VERSION, ns, "gittargets", name)
        return str(found["metadata"]["uid"])

    def _flux(
        self,
        ns: str,
        url: str,
        follows: str,
        suspend: bool,
        *,
        decryption: dict[str, Any] | None = None,
        prune: bool = False,
    ) -> None:
        source = {"url": url, "interval": "24h", "ref": {"branch": follows}}
        kustomization = {
            "interval": "24h",
            "path": "./clusters",
            "prune": prune,
            "suspend": suspend,
            "sourceRef": {"kind": "GitRepository", "name": "src"},
            **({"decryption": decryption} if decryption else {}),
        }
        for (group, version, plural), kind, obj, spec in (
            (SOURCES, "GitRepository", "src", source),
            (KUSTOMIZATIONS, "Kustomization", "ks", kustomization),
        ):
            body = {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": {"name": obj}}
            self.system.custom.create_namespaced_custom_object(
                group, version, ns, plural, {**body, "spec": spec}
            )

    def _hook(self, tenant: Tenant) -> None:
        def webhook_path() -> str:
            status = tenant.provider().get("status", {})
            return str(status.get("receiver", {}).get("webhookPath", ""))

        wait_until(lambda: bool(webhook_path()), WAIT_S, "the GitProvider's webhook path")
        self.system.hook(tenant.repo, webhook_path(), "github", "json", WEBHOOK_TOKEN)


# --- the world most modules share: one system per module, a tenant per test ----------------


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    """The module's system: every process and the Flux doubles at ``FLUX_SETTINGS``. A module
    that needs other settings defines a ``system`` of its own; ``tenants`` then uses that."""
    return launcher.start(**FLUX_SETTINGS)


@pytest.fixture
def tenants(system: System, e2e_redis: redis.Redis) -> FluxTenants:
    """Makes the test's tenants (each its own namespace and repository) in the module's
    ``system``: plain ones (``make``) and ones Flux applies (``make_flux``)."""
    return FluxTenants(system, e2e_redis)


#: How much of each process log a failing test shows.
LOG_TAIL_LINES = 80


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Item, call: CallInfo[None]) -> Iterator[None]:
    """A failing e2e test carries the tail of every running process's log in its report, so
    a failure on a CI machine can be read afterwards (the logs' folder is gone by then)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    for folder in RUNNING_LOGS:
        for log in sorted(folder.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            report.sections.append((f"log tail: {log.name}", "\n".join(lines)))
