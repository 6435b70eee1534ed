"""``GitTarget.spec.commit`` (issue 27.7): the window parsed with its bound, the GitProvider's
as the default, and the two templates' variables checked as the GitProvider's are."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.decide.targets import commit_template_problem
from shared.model import templates
from shared.model.config import BranchConfig
from shared.model.crds import GitTargetView, parse_git_target
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.target_commit import CommitSettings, parse_commit_settings
from tests.configs import branch_config, target_config

CM = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "a")
DEPLOY = ObjectId("apps", "v1", "deployments", "Deployment", "team", "web")


def test_the_window_and_templates_are_read() -> None:
    spec = {
        "commit": {"window": "1m30s", "message": {"liveTemplate": "x", "reconcileTemplate": "y"}}
    }
    assert parse_commit_settings(spec) == CommitSettings(90.0, "x", "y")
    assert parse_commit_settings({}) == CommitSettings()
    assert parse_commit_settings({"commit": {"window": "0s"}}).window_s == 0.0


@pytest.mark.parametrize(("window", "words"), [("25h", "longer than 24h"), ("soon", "soon")])
def test_a_window_the_crd_refuses_is_refused_again(window: str, words: str) -> None:
    parsed = parse_commit_settings({"commit": {"window": window}})
    assert parsed.window_s is None
    assert words in parsed.problem


def test_the_gitproviders_window_is_the_default() -> None:
    branch = branch_config("url", "main", "team", "gp", commit_window_s=5.0)
    assert isinstance(branch, BranchConfig)
    target = target_config(GitTargetUid("uid"), "team", "gt", "url", "main", path="p")
    assert target.window_s(branch) == 5.0
    assert replace(target, commit_window_s=0.0).window_s(branch) == 0.0


def test_live_data_has_the_event_and_group_variables() -> None:
    one = templates.live_data("Alice", "alice", "gt", [("UPDATE", DEPLOY)])
    assert (one["Operation"], one["Name"], one["Count"], one["Username"]) == (
        "UPDATE",
        "web",
        1,
        "alice",
    )
    many = templates.live_data("Alice", "", "gt", [("CREATE", CM), ("UPDATE", DEPLOY)])
    assert (many["Name"], many["Count"]) == ("a", 2)  # the event fields: the first write


def test_reconcile_data_names_the_type_only_when_all_writes_share_it() -> None:
    same = templates.reconcile_data("gt", [(CM, "9"), (replace_name(CM, "b"), "12")])
    assert (same["Resource"], same["Namespace"], same["Revision"], same["Count"]) == (
        "configmaps",
        "team",
        "12",
        2,
    )
    mixed = templates.reconcile_data("gt", [(CM, ""), (DEPLOY, "")])
    assert (mixed["Resource"], mixed["Group"], mixed["Revision"]) == ("", "", "")


def replace_name(oid: ObjectId, name: str) -> ObjectId:
    return ObjectId(oid.group, oid.version, oid.resource, oid.kind, oid.namespace, name)


def _target(message: dict[str, str]) -> GitTargetView:
    return parse_git_target(
        {
            "metadata": {"namespace": "a", "name": "t", "uid": "u"},
            "spec": {"providerRef": {"name": "p"}, "branch": "main", "path": "x",
                     "commit": {"message": message}},
        }
    )  # fmt: skip


def test_a_template_that_cannot_run_is_a_problem_of_the_gittarget() -> None:
    assert commit_template_problem(_target({"liveTemplate": "{{.Count}}"})) is None
    bad = commit_template_problem(_target({"reconcileTemplate": "{{.Operation}}"}))
    assert bad is not None
    assert bad.reason == "InvalidCommitTemplate"
    assert "reconcileTemplate" in bad.message and "Operation" in bad.message
