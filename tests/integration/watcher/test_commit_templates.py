"""Issue 15: the watcher checks a GitProvider's commit-message templates (Go syntax, the Go
operator's variables, run on sample data) and refuses a bad one in the GitProvider's status,
``Ready=False CommitConfigInvalid`` with a message naming the problem (facts 2.1). The API
server admits it (CEL checks only the delimiters); the GitProvider's GitTargets stay served,
their writes committed with the built-in wording (C1).

Before: the watcher did not look at templates, so ``{{.Nope}}`` was found only by the branch
worker at the first commit.
"""

from __future__ import annotations

import pytest

from tests.integration.watcher.harness import GROUP, Rig, git_provider, git_target

pytestmark = pytest.mark.integration


def test_a_bad_template_stalls_the_git_provider_until_fixed(rig: Rig, repo_url: str) -> None:
    c = rig.cluster
    c.namespace("team-a")
    message = {"eventTemplate": "[{{.Operation}}] {{.Nope}}", "groupTemplate": "{{.Count}}"}
    c.create(git_provider("team-a", repo_url, commit={"message": message}))
    c.create(git_target("team-a"))
    rig.burst()
    ready = c.conditions("GitProvider", "repo", "team-a")["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "CommitConfigInvalid")
    assert "eventTemplate" in ready["message"]
    assert "can't evaluate field Nope in type EventData" in ready["message"]
    assert c.conditions("GitProvider", "repo", "team-a")["Stalled"]["status"] == "True"
    target = c.conditions("GitTarget", "target", "team-a")
    assert target["Validated"]["reason"] != "CommitConfigInvalid", target["Validated"]
    assert "CommitConfigInvalid" not in target["Ready"]["message"]

    fixed = {"commit": {"message": {"eventTemplate": "{{.Operation}} {{.Name}}"}}}
    c.patch(GROUP, "GitProvider", "repo", "team-a", {"spec": fixed})
    rig.clock.now += 60
    rig.burst()
    ready = c.conditions("GitProvider", "repo", "team-a")["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "Succeeded")


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{{range .Resources}}{{.Kind}}{{end}}", "can't evaluate field Kind in type Resource"),
        ('{{template "other"}}', "{{template}} is refused"),
        ("{{if .Count}}{{.Count}}", "without {{end}}"),
        ('{{eq .Count "3"}}', "incompatible types for comparison"),
    ],
)
def test_each_problem_is_named(rig: Rig, repo_url: str, template: str, problem: str) -> None:
    c = rig.cluster
    c.namespace("team-a")
    c.create(git_provider("team-a", repo_url, commit={"message": {"groupTemplate": template}}))
    rig.burst()
    ready = c.conditions("GitProvider", "repo", "team-a")["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "CommitConfigInvalid")
    assert "groupTemplate" in ready["message"] and problem in ready["message"]
