"""T1 in the branch loop: a GitTarget's writes are never made with another GitProvider's
settings, even when a record of it sits on the branch (the reliability probe's branch hijack)."""

from __future__ import annotations

import dataclasses

import pytest

from services.branch_worker.intake import ProviderChanged
from shared.model.ids import GitTargetUid
from tests.configs import branch_config, target_config
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


def _other_tenant(rig: Rig) -> None:
    """The loop's GitTarget record now belongs to namespace ``zattacker``'s GitProvider, which
    has no Secret of its own."""
    own = branch_config(str(rig.bare), "main", "zattacker", "gp", commit_window_s=0.0)
    rig.target = target_config(
        GitTargetUid("gt-uid-1"),
        "zattacker",
        "gt",
        str(rig.bare),
        "main",
        path="pwned",
        writer=own.writer,
    )
    rig.configs.publish_target(rig.target)


def test_a_gittarget_of_another_namespace_writes_nothing_with_this_branchs_secret(
    rig: Rig,
) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0, secret_name="victim-creds")
    rig.configs.publish_branch(rig.branch)
    loop = rig.loop()
    _other_tenant(rig)
    rig.publish("attacker-payload", "CREATE", {"evil": "1"})
    rig.drain(loop)
    loop.flush()
    assert rig.commits() == ["seed"], "nothing pushed with the victim's GitProvider"
    assert not [f for f in rig.files() if f.startswith("pwned/")]
    assert rig.events.pending_count(rig.bk) == 0, "dropped unwritten, like a withdrawn one"


def test_a_gittarget_whose_provider_has_another_committer_is_not_written_either(
    rig: Rig,
) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    rig.configs.publish_branch(rig.branch)
    loop = rig.loop()
    own = dataclasses.replace(rig.branch, provider_name="gp-2", committer_name="Victim Admin")
    rig.configs.publish_target(dataclasses.replace(rig.target, writer=own.writer))
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert rig.commits() == ["seed"]


def test_its_own_gittarget_writes_and_a_handover_starts_the_branch_over(rig: Rig) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    rig.configs.publish_branch(rig.branch)
    rig.configs.publish_target(dataclasses.replace(rig.target, writer=rig.branch.writer))
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert rig.commits()[0] == "[CREATE] v1/configmaps/app"

    # The watcher hands the branch to namespace zattacker's GitProvider and its own Secret
    # (the victim's went): a loop built with the old settings must not write with them.
    handed = dataclasses.replace(rig.branch, provider_namespace="zattacker", secret_name="z")
    rig.configs.publish_branch(handed)
    rig.configs.publish_target(dataclasses.replace(rig.target, writer=handed.writer))
    rig.publish("next", "CREATE")
    with pytest.raises(ProviderChanged):
        rig.drain(loop)
    assert rig.events.pending_count(rig.bk) == 1, "left for the next owner, nothing lost"
