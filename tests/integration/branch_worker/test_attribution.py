"""The branch worker authors each write by the user who made the edit (P5; issue 15).

Facts: upstream-gitops-reverser.md §1.4 (join tiers, the grace, a missing fact never blocks a
write), §1.6 (one window holds one author), §3.6 (author name/email, the sentinel, the
committer stays the product). Real Redis, a real bare repository, the injected clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import pytest

from sandbox.githost.outside import git
from services.branch_worker.attribution import WAIT, Attributor
from services.branch_worker.branch import BranchLoop
from services.branch_worker.holds import SIGNING_RETRY_S
from services.branch_worker.signing import SigningUnavailable
from shared.git.signing import SigningKey, generate_key
from shared.model.attribution import Author, AuthorFact
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import GitTargetUid, ObjectId
from shared.store.attribution import FactStreams
from tests.configs import target_config
from tests.integration.branch_worker.conftest import Rig
from tests.integration.branch_worker.test_signed_commits import (
    FakeSigner,
    _publish_theirs,
    verified,
)

pytestmark = pytest.mark.integration

GRACE = 3.0


def _attributed(rig: Rig, grace: float = GRACE) -> tuple[BranchLoop, FactStreams]:
    rig.target = replace(rig.target, audit_route="prod")
    rig.configs.publish_target(rig.target)
    facts = FactStreams(rig.client, rig.keys)
    loop = rig.loop(attributor=Attributor(facts, rig.clock, grace))
    return loop, facts


def _fact(name: str, user: str, display: str = "", email: str = "") -> AuthorFact:
    return AuthorFact(user, "update", "", "configmaps", "team", name, f"uid-{name}", "1", "a",
                      "2026-01-01T00:00:00Z", display, email)  # fmt: skip


def _log(rig: Rig) -> list[str]:
    out = git("log", "--format=%an <%ae>|%cn <%ce>|%s", "main", cwd=rig.bare)
    return out.splitlines()


def test_two_authors_in_one_window_make_two_commits_authored_by_them(rig: Rig) -> None:
    loop, facts = _attributed(rig)
    facts.append("prod", {"configmaps": [_fact("a", "alice", "Alice L", "alice@example.org")]})
    facts.append("prod", {"configmaps": [_fact("b", "system:serviceaccount:ci:bot")]})
    rig.publish("a")
    rig.publish("b")
    rig.drain(loop)
    loop.flush(force=True)
    committer = f"{rig.branch.committer_name} <{rig.branch.committer_email}>"
    authors = [line.split("|")[:2] for line in _log(rig)[:2]]
    assert authors == [
        [
            "system:serviceaccount:ci:bot <systemserviceaccountcibot@noreply.cluster.local>",
            committer,
        ],
        ["Alice L <alice@example.org>", committer],
    ]


def test_an_event_waits_for_its_fact_without_blocking_and_the_window_stays_open(rig: Rig) -> None:
    grace = rig.branch.commit_window_s * 2  # longer than the window, to see the close wait
    loop, facts = _attributed(rig, grace)
    facts.append("prod", {"configmaps": [_fact("a", "alice")]})
    rig.publish("a")
    rig.drain(loop)
    assert loop.open_windows[rig.target.uid].author is not None  # a's window, alice's
    rig.publish("b")  # its fact has not arrived
    rig.drain(loop)  # returns at once: the event is left for a later pass
    assert len(loop.open_windows[rig.target.uid].entries) == 1
    assert loop.next_deadline() == rig.clock.now + grace  # not now: no spinning
    rig.clock.now += rig.branch.commit_window_s + 0.5  # a's window is due ...
    loop.flush()
    assert len(_log(rig)) == 1  # ... but its close waits with b (only the seed commit)
    facts.append("prod", {"configmaps": [_fact("b", "alice")]})
    loop.handle([])  # the next pass finds the fact: b joins alice's window
    assert len(loop.open_windows[rig.target.uid].entries) == 2
    loop.flush(force=True)
    assert [line.split("|")[0] for line in _log(rig)[:1]] == ["alice <alice@noreply.cluster.local>"]


def test_after_the_grace_a_missing_fact_is_the_unresolved_sentinel(rig: Rig) -> None:
    loop, facts = _attributed(rig)
    rig.publish("a")
    rig.drain(loop)
    assert not loop.open_windows
    rig.clock.now += GRACE
    loop.handle([])
    loop.flush(force=True)
    assert _log(rig)[0].split("|")[0] == (
        "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>"
    )
    facts.append("prod", {"configmaps": [_fact("a", "late")]})  # a late fact rewrites nothing
    loop.handle([])
    loop.flush(force=True)
    assert len(_log(rig)) == 2 and "late" not in _log(rig)[0]


def test_without_attribution_the_committer_authors(rig: Rig) -> None:
    loop = rig.loop(attributor=Attributor(FactStreams(rig.client, rig.keys), rig.clock, GRACE))
    rig.publish("a")
    rig.drain(loop)
    assert loop.open_windows[rig.target.uid].author is None
    loop.flush(force=True)
    author, committer, _ = _log(rig)[0].split("|")
    assert author == committer


def test_a_replay_after_a_rejected_push_keeps_each_commit_s_author(rig: Rig) -> None:
    """M7 with P5: the windows committed again on the new tip keep their authors."""
    loop, facts = _attributed(rig)
    facts.append("prod", {"configmaps": [_fact("a", "alice"), _fact("b", "bob")]})
    rig.publish("a")
    rig.publish("b")
    rig.drain(loop)
    rig.foreign_push()  # the CAS push of the two commits is rejected once
    loop.flush(force=True)
    lines = _log(rig)
    assert [line.split("|")[0] for line in lines[:2]] == [
        "bob <bob@noreply.cluster.local>",
        "alice <alice@noreply.cluster.local>",
    ]
    assert lines[2].endswith("foreign notes.md")  # replayed on top of the foreign commit


def _held_alice_then_bob(rig: Rig) -> tuple[BranchLoop, FakeSigner, SigningKey, str]:
    """A signed, attributed GitTarget whose key is out: alice's window, then bob's, held."""
    rig.target = replace(rig.target, audit_route="prod", signing_secret="signing")
    rig.configs.publish_target(rig.target)
    facts = FactStreams(rig.client, rig.keys)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    signer.failure = SigningUnavailable("Secret team/signing: no key", permanent=True)
    loop = rig.loop(signer=signer, attributor=Attributor(facts, rig.clock, GRACE))
    facts.append("prod", {"configmaps": [_fact("a", "alice"), _fact("b", "bob")]})
    before = rig.head()
    rig.publish("a")
    rig.drain(loop)
    loop.flush(force=True)  # alice's window is held
    rig.publish("b")
    rig.drain(loop)
    loop.flush(force=True)  # bob's window meets alice's in the hold
    assert rig.head() == before and loop.held() == [rig.target.uid]
    return loop, signer, key, before


def test_held_windows_of_two_authors_become_two_commits_in_order(rig: Rig) -> None:
    """P5 with P6: windows held while the GitTarget's signing key is out keep one author per
    commit. alice's window and then bob's are held; once the key works they are committed in
    order, each with its own author and only its own edit (never bob's edit under alice)."""
    loop, signer, key, before = _held_alice_then_bob(rig)
    signer.failure = None
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    lines = _log(rig)
    assert [line.split("|")[0] for line in lines[:2]] == [
        "bob <bob@noreply.cluster.local>",
        "alice <alice@noreply.cluster.local>",
    ]
    assert git("rev-parse", "main~2", cwd=rig.bare).strip() == before
    changed = [
        git("show", "--name-only", "--format=", rev, cwd=rig.bare).split()
        for rev in ("main", "main~1")
    ]
    assert changed[0] == ["apps/team/configmaps/b.yaml"]  # bob's commit: his edit alone
    assert "apps/team/configmaps/a.yaml" in changed[1]  # alice's (with the folder's first files)
    assert "apps/team/configmaps/b.yaml" not in changed[1]
    assert verified(rig, "main", key) and verified(rig, "main~1", key)
    assert rig.events.pending_count(rig.bk) == 0 and not loop.busy()


def test_splitting_held_windows_keeps_an_overlapping_targets_open_writes(rig: Rig) -> None:
    """P5 with P6, M8: splitting held windows rebuilds the held folder from HEAD; the open,
    uncommitted write of another GitTarget whose folder lies inside it is made again, left
    out of the held commits, and committed in its own window."""
    loop, signer, _, before = _held_alice_then_bob(rig)
    inner = target_config(
        GitTargetUid("gt-uid-2"), "team", "inner", str(rig.bare), "main", path="apps/inner"
    )
    rig.configs.publish_target(inner)
    signer.failure = None
    rig.clock.now += SIGNING_RETRY_S - 1
    _publish_theirs(rig, inner)
    rig.drain(loop)  # inner's window opens; it is not due at the retry below
    rig.clock.now += 1
    loop.flush()
    assert git("rev-parse", "main~2", cwd=rig.bare).strip() == before
    theirs = "apps/inner/team/configmaps/theirs.yaml"
    assert theirs not in rig.files()
    loop.flush(force=True)
    assert "b: '1'" in rig.show(theirs)
    assert _log(rig)[0].split("|")[0] == _log(rig)[0].split("|")[1]  # the committer's
    assert rig.events.pending_count(rig.bk) == 0 and not loop.busy()


def test_the_wait_for_a_fact_and_the_facts_read_are_measured(rig: Rig) -> None:
    """P5 metrics (facts §5.1): ``attribution_resolution_wait_seconds`` observes the injected
    clock's wait from the first look to the join; ``attribution_facts_total{op="read"}``
    counts the facts an owner read."""
    from prometheus_client import REGISTRY

    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    wait = "gitops_reverser_attribution_resolution_wait_seconds_sum"
    labels = {"tier": "exact", "event_kind": "UPDATE", "group": "", "version": "v1"}
    labels["resource"] = "configmaps"
    waited, read = (
        sample(wait, **labels),
        sample("gitops_reverser_attribution_facts_total", op="read"),
    )
    loop, facts = _attributed(rig)
    rig.publish("a")
    rig.drain(loop)  # no fact yet: the event waits
    rig.clock.now += 1.5
    facts.append("prod", {"configmaps": [_fact("a", "alice")]})
    loop.handle([])
    assert sample(wait, **labels) - waited == pytest.approx(1.5)
    assert sample("gitops_reverser_attribution_facts_total", op="read") - read == 1


def _update(name: str, rv: str = "1") -> ObjectEvent:
    oid = ObjectId("", "v1", "configmaps", "ConfigMap", "team", name)
    ref = GitTargetRef(GitTargetUid("t"), "team", "target")
    return ObjectEvent(ref, "UPDATE", oid, f"uid-{name}", rv, {}, (), 0.0)


def test_a_pass_indexes_each_stream_once_and_facts_still_age_out(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The join's index of a stream's facts is built once per read that brings facts, not
    once per event (a pass of many events on one type pays for it once); a read that brings
    nothing keeps it; and a fact older than ``FACT_TTL_S`` leaves the index even within a
    pass, without a new read, as it did when each event scanned the facts."""
    from services.branch_worker import attribution
    from shared.decide.attribution import FactIndex

    builds: list[int] = []
    real = FactIndex.of

    def counted(facts: Iterable[AuthorFact]) -> FactIndex:
        index = real(facts)
        builds.append(len(index.exact))
        return index

    monkeypatch.setattr(FactIndex, "of", counted)
    target = replace(rig.target, audit_route="prod")
    facts = FactStreams(rig.client, rig.keys)
    facts.append("prod", {"configmaps": [_fact(n, f"user-{n}") for n in ("a", "b", "c")]})
    attributor = Attributor(facts, rig.clock, GRACE)
    attributor.new_pass()
    found = [attributor.author(target, f"{i}-0", _update(n)) for i, n in enumerate("abc")]
    assert [a.username for a in found if isinstance(a, Author)] == ["user-a", "user-b", "user-c"]
    assert builds == [3]  # one index for three events
    attributor.new_pass()  # the stream is read again: nothing new, the index is kept
    assert isinstance(attributor.author(target, "4-0", _update("a")), Author)
    assert builds == [3]
    rig.clock.now += attribution.FACT_TTL_S / 2
    facts.append("prod", {"configmaps": [_fact("d", "user-d")]})
    attributor.new_pass()
    assert isinstance(attributor.author(target, "5-0", _update("d")), Author)
    assert builds == [3, 4]
    rig.clock.now += attribution.FACT_TTL_S / 2 + 1  # a, b, c age out; d does not
    assert attributor.author(target, "6-0", _update("a")) is WAIT  # same pass, no read
    assert isinstance(attributor.author(target, "7-0", _update("d")), Author)
    assert builds == [3, 4, 1]


def _grace_waits_until_applied(rig: Rig, loop: BranchLoop, most: int) -> int:
    """Run the owner's passes as its wakes would, moving the injected clock only to the end
    of a grace something waits for; how many such waits it took until nothing is left (at
    most ``most``: a backlog that waits one grace per event fails here, not in hours)."""
    waits = 0
    while loop.backlog:
        until = loop.waits.until()  # a grace that ends after now
        if until is not None:
            waits += 1
            assert waits <= most, f"{len(loop.backlog)} events still wait after {most} graces"
            rig.clock.now = until
        loop.handle([])
    return waits


def test_a_backlog_without_facts_waits_one_grace_in_all(rig: Rig) -> None:
    """N5: an audit outage (no fact for any event) while 1,200 edits arrive (more than a
    pass's slice): each event's grace started when the owner first saw it, so the backlog
    waits one grace in all, not one per event, and every edit is committed, authored by the
    unresolved sentinel."""
    loop, _ = _attributed(rig)
    names = [f"cm-{n:04d}" for n in range(1200)]
    for name in names:
        rig.publish(name)
    rig.drain(loop)  # the owner reads 1,000 ...
    rig.drain(loop)  # ... and then the rest, before any grace ran out
    assert len(loop.backlog) == 1200  # nothing applied yet: the first event waits
    assert _grace_waits_until_applied(rig, loop, most=2) == 1
    loop.flush(force=True)
    files = set(rig.files())
    assert all(any(f.endswith(f"/{n}.yaml") for f in files) for n in names[:: len(names) // 12])
    assert sum(1 for f in files if "/cm-" in f) == 1200
    assert {line.split("|")[0] for line in _log(rig)[:-1]} == {
        "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>"
    }


def test_each_event_s_grace_starts_when_the_owner_first_sees_it(rig: Rig) -> None:
    """N5: b arrives 1 s after a, both without facts: a's grace ends at its sight + 3 s, and
    b (queued behind a) still has its own second to wait then, ending at its sight + 3 s;
    a fact that comes within that second is b's author."""
    loop, facts = _attributed(rig)
    start = rig.clock.now
    rig.publish("a")
    rig.drain(loop)
    rig.clock.now += 1.0
    rig.publish("b")
    rig.drain(loop)
    assert loop.waits.until() == start + GRACE
    rig.clock.now = start + GRACE
    loop.handle([])  # a: the sentinel; b waits on
    assert [e.event.object_id.name for e in loop.backlog if e.event] == ["b"]
    assert loop.waits.until() == start + 1.0 + GRACE
    facts.append("prod", {"configmaps": [_fact("b", "bob")]})
    loop.handle([])
    assert not loop.backlog
    loop.flush(force=True)
    authors = [line.split("|")[0] for line in _log(rig)[:2]]
    assert authors == [
        "bob <bob@noreply.cluster.local>",
        "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>",
    ]


def test_the_owner_records_its_verdict_on_the_route_when_it_changes(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N5: the first edit without a fact records ``absent`` for the route (once, not per
    event); the first that finds its fact again records ``joined``. The watcher shows it."""
    from shared.store.attribution import AuditRoutes

    loop, facts = _attributed(rig)
    written: list[str] = []
    record = facts.record_joins

    def counted(route: str, verdict: str) -> None:
        written.append(verdict)
        record(route, verdict)  # type: ignore[arg-type]

    monkeypatch.setattr(facts, "record_joins", counted)
    routes = AuditRoutes(rig.client, rig.keys)
    assert routes.joins("prod") is None
    for name in ("a", "b", "c"):
        rig.publish(name)
    rig.drain(loop)
    rig.clock.now += GRACE
    loop.handle([])
    joins = routes.joins("prod")
    assert joins is not None and joins.verdict == "absent" and joins.since.endswith("Z")
    facts.append("prod", {"configmaps": [_fact("d", "alice"), _fact("e", "alice")]})
    rig.publish("d")
    rig.publish("e")
    rig.drain(loop)
    joins = routes.joins("prod")
    assert joins is not None and joins.verdict == "joined"
    assert written == ["absent", "joined"]
