"""Every Redis key the product uses, built here and nowhere else.

One prefix (``Settings.key_prefix``, versioned: ``gr:v1``) keeps our keys apart from rq's and
from anyone else's, and lets a future layout change ignore old keys. The key families, and why
each does or does not expire:

- ``branches``: set of branch keys with work (no TTL: the branch list; a branch no GitTarget
  writes to any more is removed, with its ``branch:{bk}:*`` keys but its fence counter, by
  its owner: ``WorkerRegistry.retire``).
- ``workers``: sorted set of worker heartbeats (entries older than a lease are ignored
  and pruned).
- ``branch:{bk}:events|notices|outcomes``: streams (bounded by MAXLEN where they are hints;
  events are trimmed only after acknowledgement, since an unacknowledged event is an API edit,
  and hold one entry per object: an object's newer event replaces its older one, U1).
- ``branch:{bk}:latest``: hash of each object's newest entry id in the events stream (U1; a
  field goes with its entry's acknowledgement, the hash with the branch).
- ``branch:{bk}:state``: hash of the branch's published state (no TTL: live state).
- ``branch:{bk}:lease`` (PX = lease period) and ``branch:{bk}:fence`` (monotonic counter).
- ``branch:{bk}:meta``: hash of the branch's URL, branch name and GitProvider (no TTL).
- ``target:{uid}``: a GitTarget's published config and refusal state (deleted with it);
  ``branch:{bk}:targets``: the uids writing to a branch.
- ``applier:{ak}``: obligations (no TTL: dropped when empty).
- ``outcome:{token}``: guard that makes a token's outcome unique (TTL: the failed job's,
  ``Settings.job_failure_ttl``, a day by default, plus the job timeout, so it outlives every
  run of the job that could report: ``shared.store.attempts.guard_ttl_s``).
- ``ledger:{uid}``: status.applier per GitTarget incarnation (deleted with the GitTarget).
- ``receiver:deliveries:{provider}``: a GitProvider's replay guards, a sorted set of delivery
  ids by receipt time, bounded in age and number (``shared.store.notices``: U2; TTL: the age
  limit, renewed by each delivery).
- ``receiver:delivered:{repository}``: when a receiver last took a verified delivery for a
  repository (``repository_key`` of its URL, whichever GitProvider's receiver it was), seconds
  (``shared.store.notices``: P14; TTL: the replay guards' age limit).
- ``receiver:{digest}``: a GitProvider's webhook receiver as the watcher publishes it (no TTL:
  forgotten with the GitProvider or its ``spec.receiver``); ``receivers``: the set of published
  digests, so one left behind while no watcher ran is still forgotten.
- ``watch:{uid}:{group/resource}:{namespace}:rv``: resume cursors (deleted with the GitTarget).
- ``watch:{uid}:{group/resource}:{namespace}:known``: hash of the objects a watch has seen
  (name -> uid, kind, version), which a relist sweeps against (M9; deleted with the GitTarget,
  since ``watch_cursors`` matches it too).
- ``branch:{bk}:stall``: hash of a branch's standing stall (reason, message, since), set by
  its branch worker while its passes fail and deleted when one succeeds or the branch is
  retired (T4);
  ``stalled-branches``: the set of branch keys with one, which the watcher reads each pass.
- ``branch:{bk}:collisions``: list of the branch's latest apply-window collisions (W3), newest
  first, capped at a few dozen, for ``branch_worker inspect`` (TTL: a day, renewed by each).
- ``branch:{bk}:api_edits``: sorted set of the branch's objects (per GitTarget) by the time
  of their last API edit, which the apply window judges a revert by (W1), so a branch taken
  again remembers them (``shared.store.api_edits``; entries older than the window could need
  are dropped on each write; TTL: the same 15 minutes, renewed by each).
- ``generation:targets``: a counter the watcher increments whenever a GitTarget leaves a
  branch (withdrawn or forgotten); ``generation:refusals``: one the branch owners increment
  whenever a refusal is set or lifted. Readers that poll many branches or GitTargets read the
  counter and skip their per-key reads while it stands still (idle cost; no TTL).
- ``changed:verified``: set of the branch-state hashes whose remote verification (P10)
  changed, added by the owner's fenced write and taken (SPOP) by the watcher's light pass,
  which then reads only those branches (no TTL: at most one member per branch).
- ``changed:ledger``: the same for ledger entries (``ledger:{uid}``) whose version moved,
  added by each ledger write and taken by the watcher's light pass of ``status.applier``.
- ``changed:health``: set of the keys the watcher's reconcile pass reads a GitTarget's health
  from (``shared.store.target_health``) that changed: a GitTarget's hash when a push is
  recorded in it, its ledger counts when an outcome is counted, a branch's events stream when
  its oldest entry may have moved (an entry added to an empty stream, or one deleted); the
  pass takes the set (SPOP) and reads only those (no TTL: at most three members per
  GitTarget).
- ``worker:{id}:bell``: a branch worker's doorbell, a stream the receiver's notice store and
  the dispatcher's outcome report append the branch's key to for the branch's lease holder
  (``shared.store.bells``), so the scheduler's one blocking read wakes for them (MAXLEN ~100;
  TTL: three lease periods, renewed by the worker's heartbeat; deleted when it leaves).
- ``watcher:epoch``: a random value the watcher sets once and reads every pass; finding it
  gone or changed means Redis lost its data, so every config is published again (C8; no TTL).
- ``queue:{name}``: the rq queue of apply attempts (``Settings.apply_queue``; rq stores it as
  ``rq:queue:{prefix}:queue:{name}``), so two installs sharing one Redis never take each
  other's jobs (O4; rq's own bookkeeping, with the jobs' TTLs).
- ``commitrequest:{uid}``: hash of a CommitRequest's progress: when the watcher published it
  to its branch, and the outcome its branch worker recorded (P6; TTL: the
  commit-request TTL plus a day, renewed by each write, far past the status write that
  projects it; deleted with the object).
- ``audit:route:{route}``: an audit route as the watcher publishes it from a ClusterProvider's
  ``spec.attribution`` (the token Secret's name and key, never its value; no TTL: forgotten
  with the ClusterProvider or its ``spec.attribution``); ``audit:routes``: the set of them.
- ``audit:facts:{route}:{group/resource}``: stream of attribution facts, one entry per audit
  request and type (facts §4: MAXLEN ~10000, EXPIRE the fact TTL refreshed on every append).
- ``audit:joins:{route}``: hash ``verdict``/``since``, how the route's edits last fared in the
  join (``joined`` or ``absent``), written by branch owners when their verdict changes (no
  TTL: forgotten with the route).
- ``watcher:targets``: set of GitTarget uids whose config the watcher published, so a
  GitTarget deleted while no watcher ran is still forgotten (no TTL: the live list).
- ``suspended-targets``: set of the GitTarget uids whose ``spec.suspend`` is true (P7; no TTL:
  the live list, a uid leaves it when its GitTarget is resumed or forgotten);
  ``target:{uid}:backlog``: hash of what a suspended GitTarget's watches published meanwhile,
  its newest entry per object in publishing order (``shared.store.suspension``; moved onto
  the branch's stream when it is resumed, deleted with the GitTarget).
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.model.ids import ApplierKey, BranchKey, GitTargetUid, repository_key


@dataclass(frozen=True, slots=True)
class Keys:
    """Key builders under one prefix."""

    prefix: str = "gr:v1"

    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def apply_queue(self, name: str) -> str:
        """The rq queue named ``name`` (``Settings.apply_queue``), under the prefix (O4)."""
        return self._k("queue", name)

    @property
    def branches(self) -> str:
        """Set of every branch key that has (or had) work."""
        return self._k("branches")

    @property
    def stalled_branches(self) -> str:
        """Set of branch keys with a standing stall (T4)."""
        return self._k("stalled-branches")

    def branch_stall(self, bk: BranchKey) -> str:
        """Hash of a branch's standing stall: reason, message, since (T4)."""
        return self._k("branch", bk, "stall")

    @property
    def workers(self) -> str:
        """Sorted set of branch-worker ids scored by their last heartbeat (for fair shares)."""
        return self._k("workers")

    @property
    def verified_changed(self) -> str:
        """Set of the branch-state hashes whose remote verification (P10) changed since the
        watcher last took them (``BranchStates.verified_changes``)."""
        return self._k("changed", "verified")

    @property
    def ledger_changed(self) -> str:
        """Set of the ledger entries whose version moved since the watcher last took them
        (``Ledger.changes``)."""
        return self._k("changed", "ledger")

    @property
    def health_changed(self) -> str:
        """Set of the keys a GitTarget's health is read from that changed since the watcher
        last took them (``TargetHealth.changes``)."""
        return self._k("changed", "health")

    def worker_bell(self, worker_id: str) -> str:
        """A branch worker's doorbell stream (``shared.store.bells``)."""
        return self._k("worker", worker_id, "bell")

    def branch_events(self, bk: BranchKey) -> str:
        """Stream of object events for a branch (M1, M8)."""
        return self._k("branch", bk, "events")

    def branch_latest(self, bk: BranchKey) -> str:
        """Hash: each object's newest entry in the branch's events stream (U1)."""
        return self._k("branch", bk, "latest")

    def branch_notices(self, bk: BranchKey) -> str:
        """Stream of push notices for a branch (R4)."""
        return self._k("branch", bk, "notices")

    def branch_outcomes(self, bk: BranchKey) -> str:
        """Stream of apply-request outcomes for a branch (A4)."""
        return self._k("branch", bk, "outcomes")

    def branch_api_edits(self, bk: BranchKey) -> str:
        """Sorted set of the branch's objects by their last API edit (W1, the apply window)."""
        return self._k("branch", bk, "api_edits")

    def branch_collisions(self, bk: BranchKey) -> str:
        """List of the branch's latest apply-window collisions, newest first (W3)."""
        return self._k("branch", bk, "collisions")

    def branch_state(self, bk: BranchKey) -> str:
        """Hash of the branch's published state (Q3)."""
        return self._k("branch", bk, "state")

    def branch_meta(self, bk: BranchKey) -> str:
        """Hash: repository URL, branch name, the GitProvider that writes it."""
        return self._k("branch", bk, "meta")

    def branch_lease(self, bk: BranchKey) -> str:
        """The owner's lease (Q1)."""
        return self._k("branch", bk, "lease")

    def branch_fence(self, bk: BranchKey) -> str:
        """Counter that issues fencing tokens (Q1)."""
        return self._k("branch", bk, "fence")

    def target(self, uid: GitTargetUid) -> str:
        """A GitTarget incarnation's published config and refusal state."""
        return self._k("target", uid)

    def generation(self, what: str) -> str:
        """A counter bumped whenever ``what`` (``targets``, ``refusals``) changes anywhere."""
        return self._k("generation", what)

    @property
    def suspended_targets(self) -> str:
        """Set of the suspended GitTarget uids (P7)."""
        return self._k("suspended-targets")

    def target_backlog(self, uid: GitTargetUid) -> str:
        """What a suspended GitTarget's watches published, newest per object (P7)."""
        return self._k("target", uid, "backlog")

    def branch_targets(self, bk: BranchKey) -> str:
        """Set of GitTarget uids that write to a branch."""
        return self._k("branch", bk, "targets")

    def branch_appliers(self, bk: BranchKey) -> str:
        """Set of the applier keys a branch's owners kept obligations in (gone with the
        branch when it is retired)."""
        return self._k("branch", bk, "appliers")

    def applier(self, ak: ApplierKey) -> str:
        """What an applier is owed, the attempt out, and its backoff (A1-A5)."""
        return self._k("applier", ak)

    def outcome_guard(self, token: str) -> str:
        """Set once when a token's outcome is reported, so there is never a second (D1)."""
        return self._k("outcome", token)

    def ledger(self, uid: GitTargetUid) -> str:
        """status.applier of one GitTarget incarnation (S3)."""
        return self._k("ledger", uid)

    def ledger_counts(self, uid: GitTargetUid) -> str:
        """The incarnation's finished requests counted by outcome (its ``apply_requests``
        series, issue 26)."""
        return self._k("ledger", uid, "counts")

    def ledger_recent(self, uid: GitTargetUid) -> str:
        """The incarnation's last finished requests, newest first: a list capped at
        ``shared.store.ledger.RECENT`` (the apply window's, W1)."""
        return self._k("ledger", uid, "recent")

    def deliveries(self, provider: str) -> str:
        """The delivery ids a GitProvider's receiver has seen (R4, U2)."""
        return self._k("receiver", "deliveries", provider)

    def delivered(self, url: str) -> str:
        """When a receiver last took a verified delivery for the repository at ``url`` (P14:
        while it is recent, an idle branch trusts its view of the remote and reads no tip)."""
        return self._k("receiver", "delivered", repository_key(url))

    def receiver(self, digest: str) -> str:
        """A webhook receiver by its path digest (R1): which GitProvider, type, Secret, branches."""
        return self._k("receiver", digest)

    @property
    def receivers(self) -> str:
        """Set of every receiver digest the watcher has published."""
        return self._k("receivers")

    def watch_cursor(self, uid: GitTargetUid, group_resource: str, namespace: str) -> str:
        """Resume cursor of one watch (M1)."""
        return self._k("watch", uid, group_resource, namespace or "_cluster", "rv")

    def watch_known(self, uid: GitTargetUid, group_resource: str, namespace: str) -> str:
        """Objects one watch has seen, by name (M9 sweeps)."""
        return self._k("watch", uid, group_resource, namespace or "_cluster", "known")

    def watch_selection(self, uid: GitTargetUid, group_resource: str, namespace: str) -> str:
        """The objectSelectors one watch's seen set was listed under (issue 27): a watch that
        finds others lists again. Removed with the GitTarget's cursors (``watch_cursors``)."""
        return self._k("watch", uid, group_resource, namespace or "_cluster", "sel")

    def commit_request(self, uid: str) -> str:
        """A CommitRequest's publication and outcome, by its uid."""
        return self._k("commitrequest", uid)

    @property
    def watcher_epoch(self) -> str:
        """A marker whose loss tells the watcher that Redis came back empty (C8)."""
        return self._k("watcher", "epoch")

    @property
    def watcher_targets(self) -> str:
        """Set of GitTarget uids the watcher has published config for."""
        return self._k("watcher", "targets")

    def audit_route(self, route: str) -> str:
        """An audit route's record (which Secret holds its token)."""
        return self._k("audit", "route", route)

    @property
    def audit_routes(self) -> str:
        """Set of every audit route the watcher has published."""
        return self._k("audit", "routes")

    def audit_facts(self, route: str, group_resource: str) -> str:
        """Attribution facts of one route and type (``%`` and ``:`` escaped, facts §4)."""
        return self._k("audit", "facts", _escape(route), _escape(group_resource))

    def audit_joins(self, route: str) -> str:
        """How one route's edits last fared in the join (N5)."""
        return self._k("audit", "joins", _escape(route))

    def watch_cursors(self, uid: GitTargetUid) -> str:
        """Pattern matching every cursor of one GitTarget incarnation (for cleanup)."""
        return self._k("watch", uid, "*")


def _escape(field: str) -> str:
    """A key field with ``%`` as ``%25`` and ``:`` as ``%3A`` (facts §4)."""
    return field.replace("%", "%25").replace(":", "%3A")
