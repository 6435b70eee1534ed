"""W1-W3 at the branch: the applier's revert of an API edit is withheld, counted and shown.

Real Redis and a real bare repository, with the hand-driven clock: the attempt goes out through
the applier's record as the desk sends it, the finished request is the ledger entry the
dispatcher writes, and events carry the ``managedFields`` managers the watcher reads.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
import yaml
from prometheus_client import REGISTRY

from sandbox.githost.outside import OutsideClone, git, push
from services.branch_worker.apply_window import ApplyWindowGuard
from services.branch_worker.branch import BranchLoop
from shared.model.config import ApplierRef
from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent, Operation
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.ledger import LastRequest
from shared.store.api_edits import ApiEdits
from shared.store.collisions import Collisions
from shared.store.leases import Leases
from shared.store.ledger import Ledger
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")
ARGO = ApplierRef("Application", "argocd", "apps", "default")
EDIT = "kubectl-edit"
FLUX = "kustomize-controller"
PATH = "apps/team/configmaps/app.yaml"


def collisions(outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "gitops_reverser_apply_window_collisions_total", {"outcome": outcome}
    )
    return float(value or 0.0)


def event(
    rig: Rig,
    value: str,
    *managers: str,
    op: Operation = "UPDATE",
    second: str = "2026-12-01T10:00:05Z",
) -> None:
    """An event of ConfigMap ``app`` whose newest managedFields entries are ``managers``
    (written at ``second``; the default is long after the rig's clock, so it bounds nothing)."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "team"},
        "data": {"k": value},
    }
    rig.events.publish(
        rig.bk,
        ObjectEvent(
            target=GitTargetRef(rig.target.uid, "team", "gt"),
            operation=op,
            object_id=ObjectId("", "v1", "configmaps", "ConfigMap", "team", "app"),
            uid="uid-app",
            resource_version=str(rig.clock.now),
            body=None if op == "DELETE" else body,
            managers=tuple(ManagerEntry(m, "Update", second) for m in managers),
            observed_at=rig.clock.now,
        ),
    )


def guarded(
    rig: Rig,
    applier: ApplierRef = KS,
    enabled: bool = True,
    worker: str = "w1",
    ledger: Ledger | None = None,
) -> BranchLoop:
    """A loop whose GitTarget names ``applier``, with the apply window's guard (reading
    ``ledger``, when given)."""
    rig.target = dataclasses.replace(rig.target, applier=applier, quiet_period_s=1.0)
    rig.configs.publish_target(rig.target)
    guard = ApplyWindowGuard(
        rig.bk,
        appliers=rig.appliers,
        ledger=ledger or Ledger(rig.client, rig.keys),
        collisions=Collisions(rig.client, rig.keys),
        clock=rig.clock,
        edits=ApiEdits(rig.client, rig.keys),
        enabled=enabled,
    )
    return rig.loop(worker, guard=guard)


def publish_and_push(rig: Rig, loop: BranchLoop, value: str, *managers: str) -> None:
    event(rig, value, *managers)
    rig.drain(loop)
    rig.clock.now += 6.0  # past the 5 s commit window
    loop.flush()


def send_catch_up(rig: Rig, loop: BranchLoop, applier: ApplierRef = KS) -> float:
    """Our push owes a CatchUp; after the quiet period the desk sends it. Its sent time."""
    rig.clock.now += 2.0
    loop.apply_requests()
    attempt = rig.appliers.load(applier.key, applier.kind).attempt
    assert attempt is not None, "the CatchUp went out"
    return attempt.sent_at


def value_in_git(rig: Rig) -> str:
    return str(yaml.safe_load(rig.show(PATH))["data"]["k"])


def test_the_appliers_revert_of_an_api_edit_is_withheld(rig: Rig) -> None:
    """W1: an API edit lands while the CatchUp is out; Flux's revert is not mirrored, Git
    keeps the edit, and the edit's own push owes the CatchUp that applies it back."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    before = collisions("withheld")
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)  # the API edit, inside the apply
    rig.clock.now += 1.0
    event(rig, "first", FLUX)  # the apply reverts it
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    assert "first" not in rig.show(PATH)
    assert collisions("withheld") == before + 1
    kept = Collisions(rig.client, rig.keys).latest(rig.bk)
    assert [(c.outcome, c.object, c.applier) for c in kept] == [
        ("withheld", "ConfigMap/team/app", "Kustomization/flux-system/apps")
    ]
    owed = rig.appliers.load(KS.key, KS.kind)
    assert owed.catch_up == rig.head(), "the edit's push owes the CatchUp that re-applies it"


def test_a_branch_taken_again_still_withholds_the_revert_of_an_edit_seen_before(
    rig: Rig,
) -> None:
    """W1 across owners: the API edit is seen by one owner, whose lease is lost (its worker
    killed, or Redis away); the revert reaches the next owner, which must withhold it too. The
    soak's lost delete (an API delete an apply re-created, seen as the branch was taken again):
    an owner that kept the edit only in memory mirrored the revert, losing the edit."""
    first = guarded(rig)
    publish_and_push(rig, first, "first", EDIT)
    sent = send_catch_up(rig, first)
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)  # the API edit, inside the apply, seen by the first owner
    rig.drain(first)
    rig.clock.now += 6.0
    first.flush()  # the edit is pushed; then the first owner's lease is lost
    Leases(rig.client, rig.keys, 60_000).release(first.lease)
    before = collisions("withheld")
    second = guarded(rig, worker="w2")  # the branch taken again: a new loop and a new guard
    rig.clock.now += 1.0
    event(rig, "first", FLUX)  # the apply reverts the edit
    rig.drain(second)
    rig.clock.now += 6.0
    second.flush()
    assert value_in_git(rig) == "api"
    assert collisions("withheld") == before + 1


def test_with_the_window_off_the_revert_is_mirrored(rig: Rig) -> None:
    """The same schedule without the guard (``enabled=False``, as the e2e counterfactual's
    ``BranchJobs(apply_window=False)`` builds it): the race is observed, so the test above can
    tell the two apart."""
    loop = guarded(rig, enabled=False)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)
    rig.clock.now += 1.0
    event(rig, "first", FLUX)
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "first"


def test_the_window_stays_open_ten_seconds_after_the_finish(rig: Rig) -> None:
    """W1: the ledger's finished request keeps the window open for 10 s, then it shuts."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    ledger = Ledger(rig.client, rig.keys)
    sent = rig.clock.now
    ledger.record(
        [rig.target.uid],
        LastRequest("t-1", rig.head(), ("CatchUp",), sent, sent + 3.0, "Delivered"),
    )
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)
    rig.clock.now = sent + 3.0 + 9.0  # 9 s after the finish: still open
    event(rig, "first", FLUX)
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    rig.clock.now = sent + 3.0 + 30.0  # long after: the applier's write is mirrored
    publish_and_push(rig, loop, "later", FLUX)
    assert value_in_git(rig) == "later"


def stamp(at: float) -> str:
    """A ``managedFields`` time: the API server's clock (here the rig's) in whole seconds."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_revert_read_late_is_judged_by_the_request_it_belongs_to(rig: Rig) -> None:
    """W1 at the time of the write (the soak's chaos-flux-1/cm-00178, seed 197924): Flux's
    apply reverts an API edit made after its request was sent, but the watcher (or Redis) is
    down, so the revert's event is read 20 s later, after a newer request (decided while the
    watch was behind, so Stale) went out and finished. Judged by the latest request at reading
    time, the edit came before it was sent and the revert was mirrored; judged by the request in
    force when Flux wrote (its managedFields second), the revert is withheld."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    ledger = Ledger(rig.client, rig.keys)
    sent = rig.clock.now
    rig.clock.now = sent + 0.5
    event(rig, "api", EDIT)  # the API edit, just after the request went out
    rig.drain(loop)
    head = rig.head()
    ledger.record(
        [rig.target.uid],
        LastRequest("t-1", head, ("CatchUp",), sent, sent + 3.0, "Delivered"),
    )
    ledger.record(
        [rig.target.uid],
        LastRequest("t-2", head, ("CatchUp",), sent + 8.0, sent + 9.0, "Stale"),
    )
    before = collisions("withheld")
    rig.clock.now = sent + 20.0
    event(rig, "first", FLUX, second=stamp(sent + 2.0))  # written at sent + 2, read now
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    assert collisions("withheld") == before + 1


def test_a_revert_read_after_the_window_shut_is_withheld_if_written_inside_it(
    rig: Rig,
) -> None:
    """W1: the 10 s after the finish are measured to the applier's write, not to when its
    event is read: a revert written 1 s after the finish and read 30 s later is withheld,
    while one written after the window shut is mirrored."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = rig.clock.now
    rig.clock.now = sent + 0.5
    event(rig, "api", EDIT)
    rig.drain(loop)
    Ledger(rig.client, rig.keys).record(
        [rig.target.uid],
        LastRequest("t-1", rig.head(), ("CatchUp",), sent, sent + 3.0, "Delivered"),
    )
    rig.clock.now = sent + 30.0
    event(rig, "first", FLUX, second=stamp(sent + 4.0))
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    event(rig, "later", FLUX, second=stamp(sent + 20.0))  # written after it shut
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "later"


def test_a_stalled_branch_keeps_the_api_edit_that_an_appliers_revert_follows(rig: Rig) -> None:
    """U1 with W1: a branch recorded stalled (any failed pass records it, T4) coalesces its
    stream to each object's newest event. Flux's revert, published before the owner read the
    API edit it reverts, deleted the edit's entry: the owner never saw the edit, mirrored the
    revert as no change, and the edit was lost in Git and in the cluster. An applier's write
    now coalesces only with the applier's writes, so the edit stays (edits still coalesce with
    edits: two entries for the object, not three)."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    rig.client.sadd(rig.keys.stalled_branches, rig.bk)  # as BranchHealth.stalled records it
    rig.clock.now = sent + 1.0
    event(rig, "api-0", EDIT)
    event(rig, "api", EDIT)  # the API edit, inside the apply, not read yet
    rig.clock.now += 1.0
    event(rig, "first", FLUX)  # the apply reverts it before the owner reads the edit
    assert rig.client.xlen(rig.keys.branch_events(rig.bk)) == 2
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"


def test_a_same_second_tie_is_mirrored_and_counted_ambiguous(rig: Rig) -> None:
    """W2: a tie with another manager could be the edit itself: mirrored, counted."""
    loop = guarded(rig, ARGO)
    publish_and_push(rig, loop, "first", EDIT)
    Ledger(rig.client, rig.keys).record(
        [rig.target.uid],
        LastRequest("t-2", rig.head(), ("Refusal",), rig.clock.now, rig.clock.now + 2, "Failed"),
    )
    rig.clock.now += 1.0
    event(rig, "api", EDIT)
    before = collisions("ambiguous")
    rig.clock.now += 0.5
    publish_and_push(rig, loop, "tie", "argocd-controller", EDIT)
    assert value_in_git(rig) == "tie"
    assert collisions("ambiguous") == before + 1
    assert Collisions(rig.client, rig.keys).latest(rig.bk)[0].outcome == "ambiguous"


def test_a_delete_is_never_withheld(rig: Rig) -> None:
    """W2: a DELETE in the window is mirrored."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    send_catch_up(rig, loop)
    rig.clock.now += 1.0
    event(rig, "api", EDIT)
    rig.clock.now += 1.0
    event(rig, "", FLUX, op="DELETE")
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert PATH not in rig.files()


def test_inspect_shows_the_collisions(rig: Rig) -> None:
    """O3/W3: ``branch_worker inspect`` lists the branch's latest collisions."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)
    event(rig, "first", FLUX)
    rig.drain(loop)
    out = rig.inspect()
    assert (
        "apply window: withheld ConfigMap/team/app of GitTarget team/gt "
        "(Kustomization/flux-system/apps" in out
    )
    assert "reverted an API edit" in out


def test_an_owner_that_took_over_judges_with_the_edit_its_predecessor_saw(rig: Rig) -> None:
    """W1 (issue 12, the window search): the owner that read the API edit acknowledged it and
    is gone; the next owner (a new loop and guard, as after a crash or a lease takeover) reads
    only Flux's revert. The edit's time is in Redis, so the revert is still withheld; when it
    lived in the owner's memory the new owner mirrored it ("no API edit since the request was
    sent") and Git got Flux's value back."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    rig.clock.now = sent + 1.0
    publish_and_push(rig, loop, "api", EDIT)  # read, pushed and acknowledged by this owner
    assert value_in_git(rig) == "api"
    Leases(rig.client, rig.keys, 60_000).release(loop.lease)  # the owner is gone
    successor = guarded(rig, worker="w2")  # a fresh owner: nothing of the old one's memory
    event(rig, "first", FLUX)  # the apply reverts the edit; only the successor reads it
    rig.drain(successor)
    rig.clock.now += 6.0
    successor.flush()
    assert value_in_git(rig) == "api"
    assert Collisions(rig.client, rig.keys).latest(rig.bk)[0].outcome == "withheld"


def test_an_applications_withheld_revert_owes_it_a_repair_of_the_tip(rig: Rig) -> None:
    """W1, A1: Argo CD's revert, 2 s after its sync finished, is withheld; an Application is
    owed no CatchUp for the edit's push, so the collision owes it a Repair: one sync of the tip
    (which holds the edit), sent once the branch is quiet and that sync's window has closed."""
    loop = guarded(rig, ARGO)
    publish_and_push(rig, loop, "first", EDIT)
    sent = rig.clock.now
    Ledger(rig.client, rig.keys).record(
        [rig.target.uid],
        LastRequest("t-3", rig.head(), ("ForeignCommit",), sent, sent + 3.0, "Delivered"),
    )
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)  # the API edit, inside the sync
    rig.drain(loop)
    rig.clock.now = sent + 5.0
    event(rig, "first", "argocd-controller")  # the sync reverts it; its window is open
    rig.drain(loop)
    withheld_at = rig.clock.now
    owed = rig.appliers.load(ARGO.key, ARGO.kind)
    assert owed.owes() == {"Repair": frozenset({rig.target.uid})}
    assert owed.catch_up is None
    rig.clock.now += 6.0  # past the commit window: the edit is pushed
    loop.flush()
    assert value_in_git(rig) == "api"
    loop.apply_requests()
    assert rig.appliers.load(ARGO.key, ARGO.kind).attempt is None, "the window is still open"
    rig.clock.now = withheld_at + 10.0
    loop.apply_requests()
    attempt = rig.appliers.load(ARGO.key, ARGO.kind).attempt
    assert attempt is not None, "the Repair went out"
    assert (attempt.commit, dict(attempt.reasons)) == (
        rig.head(),
        {"Repair": frozenset({rig.target.uid})},
    )


def test_a_kustomizations_withheld_revert_owes_no_repair(rig: Rig) -> None:
    """A Kustomization's withheld revert is repaired by the CatchUp of the edit's push: no
    Repair is owed (the test above is the Application's)."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)
    rig.clock.now += 1.0
    event(rig, "first", FLUX)
    rig.drain(loop)
    assert collisions("withheld") >= 1
    assert rig.appliers.load(KS.key, KS.kind).repairs == frozenset()


def outside_push(rig: Rig, value: str | None) -> str:
    """Someone else pushes ConfigMap ``app`` at ``value`` (None: deletes its file), as a
    person writes it; the branch's owner hears of it (its webhook) and follows the tip."""
    document = (
        "# edited by hand\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team\n"
        f"data:\n  k: {value}\n"
    )
    work = rig.tmp / f"outside-{value}"
    if value is None:
        clone = OutsideClone(str(rig.bare), work)
        clone.git("rm", "-q", PATH)
        sha = clone.commit("outside delete of app")
        clone.push()
        return sha
    return push(str(rig.bare), work, {PATH: document}, f"outside {value}")


def older_artifact(rig: Rig, loop: BranchLoop, newer: str | None) -> float:
    """Flux is asked to apply the outside push v2 and fetches it; before it applies, a newer
    outside push (``newer``: a value, or None for a delete) lands and the owner follows it.
    The request's sent time."""
    publish_and_push(rig, loop, "first", EDIT)
    v2 = outside_push(rig, "v2")
    loop.on_notices([rig.notice(v2)])
    sent = send_catch_up(rig, loop)
    attempt = rig.appliers.load(KS.key, KS.kind).attempt
    assert attempt is not None and attempt.commit == v2
    v3 = outside_push(rig, newer)
    loop.on_notices([rig.notice(v3)])  # the owner's work tree is at the newer push
    assert loop.tip == v3
    return sent


def test_an_apply_of_an_artifact_older_than_the_tip_is_withheld(rig: Rig) -> None:
    """W1 (historical; the safety suite's "written twice"): Flux fetched its source between
    two outside pushes, so it applies v2 after the branch moved to v3. Its write (its manager
    alone, no API edit) brings back what Git held at an older commit: withheld and counted,
    so Git keeps v3 and the ForeignCommit owed for v3 applies it. Mirrored, the owner's commit
    wrote v2 again over v3 (an outside push lost, a value written twice)."""
    loop = guarded(rig)
    sent = older_artifact(rig, loop, "v3")
    before = collisions("historical")
    commits = rig.commits()
    rig.clock.now = sent + 3.0
    event(rig, "v2", FLUX)  # Flux applies the artifact it fetched: v2
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "v3"
    assert rig.commits() == commits, "nothing committed over the newer push"
    assert collisions("historical") == before + 1
    (kept, *_) = Collisions(rig.client, rig.keys).latest(rig.bk)
    assert (kept.outcome, kept.object) == ("historical", "ConfigMap/team/app")
    assert "older commit" in kept.why
    owed = rig.appliers.load(KS.key, KS.kind)
    assert owed.foreign_commit == rig.head(), "the newer push is still owed to Flux"


def test_an_apply_of_an_object_the_tip_deleted_is_withheld(rig: Rig) -> None:
    """W1 (historical): the newer outside push deleted the object's file; Flux's apply of the
    older artifact writes it again. Re-adding the file would undo that delete, so the write
    is withheld too (Flux's apply of the tip prunes the object)."""
    loop = guarded(rig)
    sent = older_artifact(rig, loop, None)
    assert PATH not in rig.files()
    before = collisions("historical")
    rig.clock.now = sent + 3.0
    event(rig, "v2", FLUX)
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert PATH not in rig.files()
    assert collisions("historical") == before + 1


def test_an_appliers_write_of_a_value_git_never_held_is_mirrored(rig: Rig) -> None:
    """W2, only proof withholds: the applier's write of a value no commit held (a value Flux
    transformed, say) is no older commit's content: mirrored, as before, and not counted."""
    loop = guarded(rig)
    sent = older_artifact(rig, loop, "v3")
    before = collisions("historical")
    rig.clock.now = sent + 3.0
    event(rig, "fresh", FLUX)
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "fresh"
    assert collisions("historical") == before


def test_the_recent_requests_are_read_again_only_when_the_ledger_entry_moved(rig: Rig) -> None:
    """An apply of many objects is many applier events: the guard reads the ledger entry's
    version for each, and its list of recent requests only when the version moved."""
    ledger = Ledger(rig.client, rig.keys)  # the guard's: its reads are counted below
    loop = guarded(rig, ledger=ledger)
    publish_and_push(rig, loop, "first", EDIT)
    reads: list[str] = []
    recent = ledger.recent

    def counting(uid: GitTargetUid) -> list[LastRequest]:
        reads.append(uid)
        return recent(uid)

    ledger.recent = counting  # type: ignore[method-assign]
    sent = rig.clock.now
    ledger.record(
        [rig.target.uid],
        LastRequest("t-1", rig.head(), ("CatchUp",), sent, sent + 0.5, "Delivered"),
    )
    for value in ("a", "b", "c"):
        rig.clock.now += 0.1
        event(rig, value, FLUX)
        rig.drain(loop)
    assert reads == [rig.target.uid]
    ledger.record(
        [rig.target.uid],
        LastRequest("t-2", rig.head(), ("CatchUp",), sent + 1.0, sent + 1.5, "Delivered"),
    )
    rig.clock.now += 0.1
    event(rig, "d", FLUX)
    rig.drain(loop)
    assert reads == [rig.target.uid] * 2


def api_edit_after_an_apply(rig: Rig, loop: BranchLoop, ledger_reason: str) -> float:
    """The no-op apply's first two steps (issue 23): a request (``ledger_reason``) went out
    at ``sent`` and its apply finished at sent + 3 (Git holds ``steady``, the applier's entry
    is stamped sent + 1); 15 s later, after that window shut, an API edit sets ``api``,
    mirrored and pushed. ``sent``."""
    publish_and_push(rig, loop, "steady", EDIT)
    sent = rig.clock.now
    Ledger(rig.client, rig.keys).record(
        [rig.target.uid],
        LastRequest("t-1", rig.head(), (ledger_reason,), sent, sent + 3.0, "Delivered"),
    )
    rig.clock.now = sent + 15.0
    publish_and_push(rig, loop, "api", EDIT)
    assert value_in_git(rig) == "api"
    return sent


def test_a_no_op_apply_after_an_api_edit_is_no_revert(rig: Rig) -> None:
    """Issue 23, W2: the CatchUp of the edit's push has Flux apply the tip, which holds ``api``:
    no value changes, only the field's owner goes back to kustomize-controller, whose entry
    keeps its older second (sent + 1, inside the first request's window). Judged at that
    second it was withheld and counted; a write that changes no value reverts nothing."""
    loop = guarded(rig)
    sent = api_edit_after_an_apply(rig, loop, "ForeignCommit")
    send_catch_up(rig, loop)
    before = (collisions("withheld"), collisions("ambiguous"), collisions("historical"))
    commits = rig.commits()
    rig.clock.now += 1.0
    event(rig, "api", FLUX, second=stamp(sent + 1.0))  # the apply of the tip: no value moves
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    assert rig.commits() == commits
    assert (collisions("withheld"), collisions("ambiguous"), collisions("historical")) == before
    assert Collisions(rig.client, rig.keys).latest(rig.bk) == []


def test_a_no_op_sync_after_an_api_edit_owes_an_application_no_repair(rig: Rig) -> None:
    """Issue 23, W2 for Argo CD: a sync of the tip that holds the API edit changes no value; taken
    for a withheld revert, it owed the Application a needless Repair sync."""
    loop = guarded(rig, ARGO)
    sent = api_edit_after_an_apply(rig, loop, "ForeignCommit")
    before = collisions("withheld")
    rig.clock.now += 2.0
    event(rig, "api", "argocd-controller", second=stamp(sent + 1.0))
    rig.drain(loop)
    assert collisions("withheld") == before
    owed = rig.appliers.load(ARGO.key, ARGO.kind)
    assert owed.repairs == frozenset()
    assert "Repair" not in owed.owes()


def test_a_flux_round_that_reverts_an_edit_counts_one_collision(rig: Rig) -> None:
    """Issue 23, W3: Flux's round over an edit made inside its apply is two writes: it first merges
    the kubectl entry into its own (no value moves; its entry keeps its older second), then
    applies (the revert). Only the revert is withheld and counted: one, not two."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    before = collisions("withheld")
    rig.clock.now = sent + 1.0
    event(rig, "first", FLUX, second=stamp(sent + 1.0))  # the apply: Git holds it already
    rig.clock.now = sent + 2.0
    event(rig, "api", EDIT)  # the API edit, inside the apply
    rig.clock.now = sent + 4.0
    event(rig, "api", FLUX, second=stamp(sent + 1.0))  # the entries merged: nothing moved
    event(rig, "first", FLUX, second=stamp(sent + 4.0))  # the revert
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    assert collisions("withheld") == before + 1
    kept = Collisions(rig.client, rig.keys).latest(rig.bk)
    assert [c.outcome for c in kept] == ["withheld"]


def test_a_no_op_apply_in_a_kustomize_folder_is_no_revert(rig: Rig) -> None:
    """Issue 23, W2 where the objects are a kustomization's render: the apply of a tip whose render
    already holds the API edit changes no value either, so it is no collision."""
    document = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: steady\n"
    push(
        str(rig.bare),
        rig.tmp / "kustomize-seed",
        {
            "apps/kustomization.yaml": "namespace: team\nresources:\n- app.yaml\n",
            "apps/app.yaml": document,
        },
        "a kustomize folder",
    )
    loop = guarded(rig)
    sent = rig.clock.now
    Ledger(rig.client, rig.keys).record(
        [rig.target.uid],
        LastRequest("t-1", rig.head(), ("ForeignCommit",), sent, sent + 3.0, "Delivered"),
    )
    rig.clock.now = sent + 15.0
    publish_and_push(rig, loop, "api", EDIT)
    assert yaml.safe_load(rig.show("apps/app.yaml"))["data"] == {"k": "api"}
    send_catch_up(rig, loop)
    before = collisions("withheld")
    rig.clock.now += 1.0
    event(rig, "api", FLUX, second=stamp(sent + 1.0))
    rig.drain(loop)
    assert collisions("withheld") == before
    assert Collisions(rig.client, rig.keys).latest(rig.bk) == []
    rig.clock.now += 1.0
    event(rig, "api-2", EDIT)  # an API edit inside the CatchUp's apply ...
    event(rig, "api", FLUX)  # ... that the apply reverts is still withheld
    rig.drain(loop)
    assert collisions("withheld") == before + 1


def test_an_attempt_handed_back_at_its_deadline_keeps_its_window(rig: Rig) -> None:
    """W1 after A4 (the soak's chaos-flux-0/cm-00231, seed 483848): the dispatcher stamped the
    CatchUp and was killed before it reported, so the owner hands the attempt back at its
    deadline as Failed; the stamp had landed, and the apply comes seconds later. An API edit
    made just after the hand-back is reverted by that apply: the revert is withheld, since the
    handed-back request stays in the GitTarget's recent requests, finished at the hand-back
    (it is not made ``lastRequest``: no report came)."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    attempt = rig.appliers.load(KS.key, KS.kind).attempt
    assert attempt is not None
    rig.clock.now = attempt.deadline + 0.5
    loop.apply_requests()  # the owner's next wake hands the overdue attempt back
    assert rig.appliers.load(KS.key, KS.kind).attempt is None
    ledger = Ledger(rig.client, rig.keys)
    assert [(r.token, r.sent_at, r.outcome) for r in ledger.recent(rig.target.uid)] == [
        (attempt.token, sent, "Failed")
    ]
    assert ledger.last_request(rig.target.uid)[0] is None
    before = collisions("withheld")
    rig.clock.now += 0.5
    event(rig, "api", EDIT)  # the API edit, after the hand-back
    rig.clock.now += 2.0
    event(rig, "first", FLUX)  # the handed-back request's apply reverts it
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    assert collisions("withheld") == before + 1


def commits_adding(rig: Rig, value: str) -> list[str]:
    """The commits on main whose diff adds the line ``k: <value>`` (what the soak counts per
    value: tests/soak/checks.py ``value_commits``)."""
    log = git("log", "-p", "--format=commit %H", "main", cwd=rig.bare).splitlines()
    found: list[str] = []
    commit = ""
    for line in log:
        if line.startswith("commit "):
            commit = line[len("commit ") :]
        elif line.startswith("+") and line.rstrip().endswith(f"k: {value}") and commit not in found:
            found.append(commit)
    return found


def test_a_pushed_edit_reverted_by_a_handed_back_attempt_is_not_committed_over(
    rig: Rig,
) -> None:
    """W1 after A4, the update the soak met as one value in two commits (the first
    CHAOS_ATTRIBUTION=1 run, seed 243948, e243948-000740, on code before the hand-back kept
    its window): the CatchUp's dispatcher stamps Flux and is killed before it reports; an API
    edit made seconds after the stamp is committed and pushed; Flux's apply, written two
    seconds after the stamp, reverts it, but its event is read only after the owner handed the
    attempt back at its deadline (the watcher or the branch worker was down, or the machine
    slow). Forgotten at the hand-back, the request left no window: the revert was mirrored
    with no collision logged, committing the old value a second time over the pushed edit
    (the edit lost in Git; the soak's next edit of the object hid the loss, leaving only the
    value added twice). Kept in the recent requests, it withholds the revert."""
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    attempt = rig.appliers.load(KS.key, KS.kind).attempt
    assert attempt is not None
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)  # the API edit, after the stamp, before Flux's apply
    rig.drain(loop)
    rig.clock.now += 6.0  # past the 5 s commit window: the edit is pushed
    loop.flush()
    assert value_in_git(rig) == "api"
    rig.clock.now = attempt.deadline + 0.5
    loop.apply_requests()  # no report came: the owner hands the attempt back (A4)
    assert rig.appliers.load(KS.key, KS.kind).attempt is None
    before = collisions("withheld")
    rig.clock.now += 1.0
    event(rig, "first", FLUX, second=stamp(sent + 2.0))  # written at sent + 2, read now
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()
    assert value_in_git(rig) == "api"
    assert len(commits_adding(rig, "first")) == 1  # the value is never committed again
    assert len(commits_adding(rig, "api")) == 1
    assert collisions("withheld") == before + 1
