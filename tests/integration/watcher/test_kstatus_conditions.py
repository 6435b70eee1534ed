"""Conditions as kstatus reads them, through the watcher and the sandbox's API (issue 26 §4).

A WatchRule selecting Secrets for a GitTarget without ``spec.encryption``: the WatchRule is
``Ready=False SensitiveResource`` with the fix in its message; the GitTarget stays Ready and
its ConfigMaps are still published, also once the branch worker has refused a Secret (M10,
its refusal recorded as ``services.branch_worker.conditions`` records it). A GitTarget whose
GitProvider does not exist yet is in progress (Reconciling), not Stalled, and is Ready once
it is created. The Ready message is in the default ``kubectl get`` columns.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.model.ids import GitTargetUid
from tests.integration.watcher.harness import (
    CONFIGMAPS,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    mirror_setup,
    watch_rule,
)

pytestmark = pytest.mark.integration

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
SECRETS_TOO = [{"apiGroups": [""], "resources": ["configmaps", "secrets"]}]
FIX = "add spec.encryption to the GitTarget or remove secrets from the rule"


def _table(rig: Rig, plural: str, ns: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``kubectl get <plural> -n ns`` as the API answers it: column definitions, name -> cells."""
    server = rig.cluster.server
    pool = server.api_client().rest_client.pool_manager
    path = f"/apis/gitopsreverser.io/v1alpha1/namespaces/{ns}/{plural}"
    response = pool.request("GET", server.url + path, headers={"Accept": TABLE})
    assert response.status == 200, response.data
    table = json.loads(response.data)
    names = [c["name"] for c in table["columnDefinitions"]]
    rows = {
        row["object"]["metadata"]["name"]: dict(zip(names, row["cells"], strict=True))
        for row in table["rows"]
    }
    return table["columnDefinitions"], rows


def test_a_rule_selecting_secrets_without_encryption_fails_the_rule_not_the_target(
    rig: Rig, repo_url: str
) -> None:
    uid = GitTargetUid(mirror_setup(rig, repo_url, rules=SECRETS_TOO))
    rig.cluster.configmap("team-a", "app", {"v": "1"})
    rig.burst()

    rule = rig.cluster.conditions("WatchRule", "rule", "team-a")
    assert (rule["Ready"]["status"], rule["Ready"]["reason"]) == ("False", "SensitiveResource")
    assert FIX in rule["Ready"]["message"]
    target = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert target["Ready"]["status"] == "True"
    assert [e.object_id.name for e in rig.events(repo_url) if e.object_id.kind == "ConfigMap"]

    # the branch worker refuses a Secret of that rule (its own tests: test_sealed_secrets)
    message = "Secret team-a/db is sensitive and is never written to Git"
    rig.config.set_refusal(uid, "SensitiveResource", message, key="object:/Secret/team-a/db")
    rig.burst()
    target = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert target["Ready"]["status"] == "True"
    assert target["Stalled"]["status"] == "False"
    accepted = target["GitPathAccepted"]
    assert (accepted["status"], accepted["reason"]) == ("False", "SensitiveResource")

    columns, rows = _table(rig, "watchrules", "team-a")
    message_column = next(c for c in columns if c["name"] == "Message")
    assert message_column.get("priority", 0) == 0  # in the default view, not only -o wide
    assert FIX in rows["rule"]["Message"]


def test_a_folder_refusal_behind_a_secret_refusal_still_shows(rig: Rig, repo_url: str) -> None:
    """A refused Secret sorts before other refusals by key; it must not hide them."""
    uid = GitTargetUid(mirror_setup(rig, repo_url))
    rig.config.set_refusal(uid, "SensitiveResource", "s", key="object:/Secret/team-a/db")
    rig.config.set_refusal(uid, "InvalidCommitTemplate", "bad template", key="template")
    rig.burst()
    target = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert (target["Ready"]["status"], target["Ready"]["reason"]) == (
        "False",
        "InvalidCommitTemplate",
    )


def test_a_target_waiting_for_its_git_provider_is_reconciling(rig: Rig, repo_url: str) -> None:
    c = rig.cluster
    c.namespace("team-a")
    c.create(cluster_provider(accessFrom={"names": ["team-a"]}))
    c.create(git_target("team-a"))
    c.create(watch_rule("team-a", CONFIGMAPS))
    rig.burst()
    target = c.conditions("GitTarget", "target", "team-a")
    assert (target["Ready"]["status"], target["Ready"]["reason"]) == ("False", "ProviderNotFound")
    assert (target["Reconciling"]["status"], target["Stalled"]["status"]) == ("True", "False")

    c.create(git_provider("team-a", repo_url))
    rig.burst()
    assert c.conditions("GitTarget", "target", "team-a")["Ready"]["status"] == "True"
    rule = c.conditions("WatchRule", "rule", "team-a")["Ready"]
    assert (rule["status"], rule["message"]) == ("True", "mirrors configmaps into GitTarget target")
