"""The render-fidelity gate (issue 27 item 8) in the branch loop, against real Redis and a real
bare repository: in a folder whose Flux Kustomization substitutes ``postBuild`` variables, a
write keeps Git's ``${VAR}`` where the live value is still its render, and a write whose render
would not be the live object is refused (``GitPathAccepted=False``, nothing committed)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from sandbox.githost.outside import git, push
from services.branch_worker.branch import BranchLoop
from services.branch_worker.render_gate import RenderContext
from services.branch_worker.worktree import WorkTree
from services.branch_worker.writer import held_as_is
from shared.model.config import TargetConfig
from shared.model.render_fidelity import RENDER_NOT_VERIFIABLE, Mismatch
from shared.store.leases import Leases
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

WITH_VARIABLE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: team
data:
  mode: ${MODE}   # set by the cluster's Kustomization
  level: info
"""
KUSTOMIZED = {
    "apps/kustomization.yaml": "resources:\n  - app.yaml\n",
    "apps/app.yaml": WITH_VARIABLE,
}


def _loop(rig: Rig, files: dict[str, str], render: RenderContext) -> BranchLoop:
    push(str(rig.bare), rig.tmp / "person", files, "a person's files")
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    asked: list[TargetConfig] = []

    def renders(target: TargetConfig) -> RenderContext:
        asked.append(target)
        return render

    return rig.loop(trees=lambda ws: WorkTree(ws, renders=renders))


@pytest.mark.parametrize(
    ("files", "path"),
    [({"apps/settings.yaml": WITH_VARIABLE}, "apps/settings.yaml"), (KUSTOMIZED, "apps/app.yaml")],
    ids=["plain", "kustomize"],
)
def test_a_variable_whose_render_is_still_live_stays_in_git(
    rig: Rig, files: dict[str, str], path: str
) -> None:
    loop = _loop(rig, files, {"MODE": "fast"})
    rig.publish("app", "UPDATE", {"mode": "fast", "level": "debug"})
    rig.drain(loop)
    loop.flush()
    assert rig.commits()[0] == "[UPDATE] v1/configmaps/app"
    written = yaml.safe_load(rig.show(path))
    assert written["data"] == {"mode": "${MODE}", "level": "debug"}
    if path == "apps/settings.yaml":  # a plain folder's file is edited in place (P1)
        assert rig.show(path) + "\n" == WITH_VARIABLE.replace("level: info", "level: debug")
    assert rig.configs.refusal(rig.target.uid) is None


@pytest.mark.parametrize(
    ("files", "path"),
    [({"apps/settings.yaml": WITH_VARIABLE}, "apps/settings.yaml"), (KUSTOMIZED, "apps/app.yaml")],
    ids=["plain", "kustomize"],
)
def test_a_live_edit_of_a_substituted_value_is_refused_visibly(
    rig: Rig, files: dict[str, str], path: str
) -> None:
    loop = _loop(rig, files, {"MODE": "fast"})
    before = rig.head()
    rig.publish("app", "UPDATE", {"mode": "slow", "level": "info"})
    rig.drain(loop)
    loop.flush()
    assert rig.head() == before  # nothing committed
    assert rig.show(path) + "\n" == WITH_VARIABLE
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None
    assert refusal["reason"] == "RenderDoesNotMatchLive"
    assert refusal["message"].startswith("ConfigMap team/app: data.mode is '${MODE}' in Git")


def test_the_refusal_lifts_when_the_object_is_accepted_again_also_by_a_new_owner(rig: Rig) -> None:
    loop = _loop(rig, {"apps/settings.yaml": WITH_VARIABLE}, {"MODE": "fast"})
    rig.publish("app", "UPDATE", {"mode": "slow", "level": "info"})
    rig.publish("other", "UPDATE", {"k": "v"})  # another object's write lifts nothing
    rig.drain(loop)
    loop.flush()
    assert rig.configs.refusal(rig.target.uid) is not None
    Leases(rig.client, rig.keys, 60_000).release(loop.lease)  # the branch changes owner
    later = rig.loop("w2", trees=lambda ws: WorkTree(ws, renders=lambda _t: {"MODE": "fast"}))
    rig.publish("app", "UPDATE", {"mode": "fast", "level": "info"})  # the edit undone
    rig.drain(later, worker="w2")
    later.flush()
    assert rig.configs.refusal(rig.target.uid) is None


def test_a_new_object_whose_text_the_render_would_change_is_refused(rig: Rig) -> None:
    loop = _loop(rig, {"apps/settings.yaml": WITH_VARIABLE}, {"MODE": "fast"})
    rig.publish("script", "UPDATE", {"run.sh": "echo ${MODE}"})
    rig.publish("plain", "UPDATE", {"k": "v"})
    rig.drain(loop)
    loop.flush()
    assert "apps/team/configmaps/plain.yaml" in rig.files()
    assert "apps/team/configmaps/script.yaml" not in rig.files()
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "RenderDoesNotMatchLive"
    assert refusal["message"].startswith("ConfigMap team/script: ")


def test_substitutions_that_cannot_be_known_refuse_writes_but_not_deletes(rig: Rig) -> None:
    unknown = Mismatch("its Kustomization's postBuild.substituteFrom ConfigMap vars does not exist")
    unknown = dataclasses.replace(unknown, reason=RENDER_NOT_VERIFIABLE)
    loop = _loop(rig, {"apps/settings.yaml": WITH_VARIABLE}, unknown)
    rig.publish("other", "UPDATE", {"k": "v"})
    rig.drain(loop)
    loop.flush()
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == RENDER_NOT_VERIFIABLE
    assert "ConfigMap vars does not exist" in refusal["message"]
    rig.publish("app", "DELETE")
    rig.drain(loop)
    loop.flush()
    assert "apps/settings.yaml" not in git("ls-tree", "-r", "--name-only", "main", cwd=rig.bare)


def test_without_substitutions_the_live_value_replaces_the_variable(rig: Rig) -> None:
    loop = _loop(rig, {"apps/settings.yaml": WITH_VARIABLE}, None)
    rig.publish("app", "UPDATE", {"mode": "slow", "level": "info"})
    rig.drain(loop)
    loop.flush()
    assert "mode: slow" in rig.show("apps/settings.yaml")


def test_git_holds_an_object_as_it_came_when_its_render_is_the_object(rig: Rig) -> None:
    """W2's "held as is" reads Git's document through the render: an object whose render Git
    holds makes no write, so the apply window's guard has nothing to withhold."""
    loop = _loop(rig, {"apps/settings.yaml": WITH_VARIABLE}, {"MODE": "fast"})
    same = rig.event("app", "UPDATE", {"mode": "fast", "level": "info"})
    edited = rig.event("app", "UPDATE", {"mode": "slow", "level": "info"})
    assert loop.tree.held_as_is(rig.target, same)
    assert not loop.tree.held_as_is(rig.target, edited)
    assert not held_as_is(same, loop.tree.folder(rig.target), None)  # no substitutions


def _ignoring(rig: Rig, data: dict[str, str], *pointers: str) -> None:
    """Publish an UPDATE of ``app`` whose rule's ignoreDifferences names ``pointers``."""
    event = dataclasses.replace(rig.event("app", "UPDATE", data), ignored=pointers)
    rig.events.publish(rig.bk, event)


@pytest.mark.parametrize(
    ("files", "path"),
    [({"apps/settings.yaml": WITH_VARIABLE}, "apps/settings.yaml"), (KUSTOMIZED, "apps/app.yaml")],
    ids=["plain", "kustomize"],
)
def test_an_ignored_field_holding_a_variable_is_not_judged_by_the_gate(
    rig: Rig, files: dict[str, str], path: str
) -> None:
    """Issue 27.13 with item 8: a field a rule's ignoreDifferences names keeps Git's text (a
    variable here), whatever its live value, so the gate leaves it out of the comparison: an
    edit of only that field is no write and no refusal; an edit of another field is written
    with the variable kept."""
    loop = _loop(rig, files, {"MODE": "fast"})
    before = rig.head()
    _ignoring(rig, {"mode": "slow", "level": "info"}, "/data/mode")
    rig.drain(loop)
    loop.flush()
    assert rig.head() == before  # only the ignored field moved: no commit
    assert rig.configs.refusal(rig.target.uid) is None
    _ignoring(rig, {"mode": "slow", "level": "debug"}, "/data/mode")
    rig.drain(loop)
    loop.flush()
    assert rig.commits()[0] == "[UPDATE] v1/configmaps/app"
    assert yaml.safe_load(rig.show(path))["data"] == {"mode": "${MODE}", "level": "debug"}
    assert rig.configs.refusal(rig.target.uid) is None


def test_an_ignored_literal_does_not_excuse_a_variable_the_live_object_contradicts(
    rig: Rig,
) -> None:
    """The gate still judges every field the rule does not ignore."""
    loop = _loop(rig, {"apps/settings.yaml": WITH_VARIABLE}, {"MODE": "fast"})
    before = rig.head()
    _ignoring(rig, {"mode": "slow", "level": "debug"}, "/data/level")
    rig.drain(loop)
    loop.flush()
    assert rig.head() == before
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "RenderDoesNotMatchLive"
    assert refusal["message"].startswith("ConfigMap team/app: data.mode is '${MODE}' in Git")
    _ignoring(rig, {"mode": "fast", "level": "debug"}, "/data/level")
    rig.drain(loop)
    loop.flush()
    assert rig.head() == before  # the ignored level keeps Git's info: nothing to write
    assert rig.configs.refusal(rig.target.uid) is None


def test_an_object_differing_only_in_an_ignored_field_is_held_as_is_through_the_render(
    rig: Rig,
) -> None:
    """W2's "held as is" judges the event the writer would write: Git's variable where the
    render still holds, Git's value where the rule ignores the field."""
    loop = _loop(rig, {"apps/settings.yaml": WITH_VARIABLE}, {"MODE": "fast"})
    ignoring = dataclasses.replace(
        rig.event("app", "UPDATE", {"mode": "fast", "level": "debug"}), ignored=("/data/level",)
    )
    assert loop.tree.held_as_is(rig.target, ignoring)
    assert not loop.tree.held_as_is(rig.target, dataclasses.replace(ignoring, ignored=()))
