"""The applier record and its JSON; the applier reference as identity only (A3)."""

from __future__ import annotations

import json
from dataclasses import asdict

from hypothesis import given
from hypothesis import strategies as st

from shared.model.appliers import REASONS, Applier, Attempt
from shared.model.config import ApplierRef, TargetConfig, appliers_of
from shared.model.ids import GitTargetUid
from shared.model.requests import ApplyRequest
from tests.configs import target_config

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")
uids = st.frozensets(st.sampled_from(["u1", "u2", "u3"]))


attempts = st.builds(
    Attempt,
    token=st.just("t1"),
    commit=st.just("c2"),
    reasons=st.dictionaries(st.sampled_from(REASONS), uids),
    sent_at=st.just(1.0),
    deadline=st.just(331.0),
)
appliers = st.builds(
    Applier,
    kind=st.sampled_from(["Kustomization", "Application"]),
    foreign_commit=st.none() | st.just("c1"),
    foreign_uids=uids,
    refusals=uids,
    catch_up=st.none() | st.just("c2"),
    catch_up_uids=uids,
    attempt=st.none() | attempts,
    failures=st.integers(0, 9),
    next_try_at=st.floats(0, 1e6),
    quiet_periods=st.dictionaries(st.sampled_from(["u1", "u2"]), st.floats(0, 600)),
)


@given(appliers)
def test_an_applier_survives_its_json(applier: Applier) -> None:
    text = applier.to_json()
    assert Applier.from_json(text) == applier
    assert Applier.from_json(text).to_json() == text, "stable: an unchanged record encodes alike"


def test_two_gittargets_naming_one_applier_share_one_reference() -> None:
    """A3: the reference holds no quietPeriod, so both GitTargets group under one key."""
    a = target_config(GitTargetUid("a"), "t", "a", "u", "main", path="a", applier=KS)
    b = target_config(
        GitTargetUid("b"), "t", "b", "u", "main", path="b", applier=KS, quiet_period_s=90.0
    )
    none = target_config(GitTargetUid("c"), "t", "c", "u", "main", path="c")
    assert appliers_of([a, none, b]) == {KS: [a, b]}
    assert len({KS.key, ApplierRef("Kustomization", "flux-system", "apps", "remote").key}) == 2


def test_a_target_config_written_with_the_period_inside_the_reference_still_reads() -> None:
    """Records published by the previous version carry quiet_period_s inside the applier."""
    current = target_config(
        GitTargetUid("a"), "t", "a", "u", "main", path="a", applier=KS, quiet_period_s=45.0
    )
    old = asdict(current)
    del old["quiet_period_s"]
    old["applier"]["quiet_period_s"] = 45.0
    assert TargetConfig.from_json(json.dumps(old)) == current


def test_an_apply_request_carries_the_applier_identity() -> None:
    request = ApplyRequest("t1", "bk", "u", "main", "c1", {"CatchUp": ["a"]}, KS, 1.0)
    wire = json.loads(request.to_json())
    assert wire["applier"] == {
        "kind": "Kustomization",
        "namespace": "flux-system",
        "name": "apps",
        "cluster_provider": "default",
    }
    assert ApplyRequest.from_json(request.to_json()) == request
    wire["applier"]["quiet_period_s"] = 30.0  # a job enqueued by the previous version
    assert ApplyRequest.from_json(json.dumps(wire)) == request
