"""A GitTarget's own commit window and message templates (issue 27.7), with its GitProvider's
as the defaults, through a branch loop and a bare repository."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.branch_worker.conditions import BAD_TEMPLATE
from shared.model.events import Listing
from shared.model.ids import ObjectId
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


def _target(rig: Rig, **fields: object) -> None:
    rig.target = replace(rig.target, **fields)  # type: ignore[arg-type]
    rig.configs.publish_target(rig.target)


def _provider_window(rig: Rig, seconds: float) -> None:
    rig.branch = replace(rig.branch, commit_window_s=seconds)
    rig.configs.publish_branch(rig.branch)


def test_the_gittargets_window_wins_over_the_gitproviders(rig: Rig) -> None:
    """The GitProvider commits every write at once (0s); the GitTarget asks for 60s: two
    writes wait out its window and make one commit."""
    _provider_window(rig, 0.0)
    _target(rig, commit_window_s=60.0)
    loop = rig.loop()
    base = len(rig.commits())
    rig.publish("a", "CREATE")
    rig.publish("b", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert len(rig.commits()) == base  # the GitProvider's 0s would have committed both
    rig.clock.now += 60
    loop.flush()
    assert len(rig.commits()) == base + 1
    assert {"apps/team/configmaps/a.yaml", "apps/team/configmaps/b.yaml"} <= set(rig.files())


def test_a_zero_window_on_the_gittarget_commits_each_write(rig: Rig) -> None:
    _provider_window(rig, 300.0)
    _target(rig, commit_window_s=0.0)
    loop = rig.loop()
    base = len(rig.commits())
    rig.publish("a", "CREATE")
    rig.publish("b", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert len(rig.commits()) == base + 2


LIVE = (
    "{{if eq .Count 1}}{{.Operation}} {{.Name}}"
    "{{else}}{{.Count}} on {{.GitTarget}}: {{range .Resources}}{{.Name}} {{end}}{{end}}"
)


def test_the_live_template_words_one_write_and_many(rig: Rig) -> None:
    _target(rig, live_template=LIVE)
    loop = rig.loop()
    rig.publish("one", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits()[0] == "CREATE one"
    rig.publish("a", "UPDATE")
    rig.publish("b", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits()[0] == "2 on gt: a b"
    assert "template" not in rig.configs.refusals(rig.target.uid)


def test_the_reconcile_template_words_a_listings_deletes(rig: Rig) -> None:
    _target(
        rig,
        live_template="live {{.Count}}",
        reconcile_template="reconciled {{.Count}} {{.Resource}} in {{.Namespace}}",
    )
    loop = rig.loop()
    for name in ("keep", "gone1", "gone2"):
        rig.publish(name, "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits()[0] == "live 3"
    kind = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "")
    listing = Listing(rig.event("keep").target, kind, frozenset({"keep"}), rig.clock.now)
    rig.events.publish(rig.bk, listing)
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits()[0] == "reconciled 2 configmaps in team"
    assert "apps/team/configmaps/gone1.yaml" not in rig.files()


def test_a_bad_template_falls_back_to_the_gitproviders_wording(rig: Rig) -> None:
    """C1: the write is committed with the GitProvider's template, and the GitTarget says why."""
    rig.branch = replace(rig.branch, message_one="provider {{.Name}}")
    rig.configs.publish_branch(rig.branch)
    _target(rig, live_template="{{.Nope}}")
    loop = rig.loop()
    rig.publish("x", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits()[0] == "provider x"
    refusal = rig.configs.refusals(rig.target.uid)["template"]
    assert refusal["reason"] == BAD_TEMPLATE
    assert "liveTemplate" in refusal["message"]
