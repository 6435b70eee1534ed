"""``trace KIND/NAME``: the object's file (found by identity, wherever it is), the last commit
that wrote it and its author (git log on a fresh fetch), and the newest apply request whose
commit holds that commit, with its outcome (the GitTarget's ledger in Redis)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kubernetes import client

from sandbox.githost import GitHost
from sandbox.githost.outside import Identity, OutsideClone
from services.cli.errors import EXIT_NOT_FOUND, EXIT_OK
from shared.model.ledger import LastRequest
from shared.store.ledger import Ledger
from tests.integration.cli.conftest import NS
from tests.integration.cli.harness import GROUP, VERSION, Api, Cli
from tests.integration.cli.redis_state import stores

ADA = Identity("Ada Lovelace", "ada@example.org")
HELLO = """apiVersion: v1
kind: ConfigMap
metadata:
  name: hello
  namespace: team
data:
  greeting: hi
"""


@pytest.fixture
def githost(tmp_path: Path) -> Iterator[GitHost]:
    host = GitHost(tmp_path / "git")
    host.start()
    host.create_repo("team/config", files={"README.md": b"hello\n"})
    yield host
    host.stop()


@pytest.fixture
def ledger(redis_client: redis.Redis, key_prefix: str) -> Ledger:
    return stores(redis_client, key_prefix).ledger


def _tenant(api: Api, url: str) -> str:
    api.own("GitProvider", NS, "gp", {"url": url, "allowedBranches": ["main"]})
    spec = {"providerRef": {"name": "gp"}, "branch": "main", "path": "clusters/team"}
    uid = str(api.own("GitTarget", NS, "gt", spec)["metadata"]["uid"])
    rules = [{"apiGroups": [""], "resources": ["configmaps"]}]
    api.own("WatchRule", NS, "wr", {"targetRef": {"name": "gt"}, "rules": rules})
    return uid


def _request(token: str, commit: str, outcome: str, at: float) -> LastRequest:
    return LastRequest(token, commit, ("ForeignCommit",), at - 2, at, outcome, "")  # type: ignore[arg-type]


def test_trace_finds_the_file_its_commit_author_and_the_request_that_applied_it(
    api: Api, cli: Cli, githost: GitHost, tmp_path: Path, ledger: Ledger
) -> None:
    url = githost.repo_url("team/config")
    uid = _tenant(api, url)
    client.CoreV1Api(api.api).create_namespaced_config_map(
        NS, {"metadata": {"name": "hello"}, "data": {"greeting": "hi"}}
    )
    clone = OutsideClone(url, tmp_path / "clone", ADA)
    base = clone.git("rev-parse", "HEAD")
    # a person's file name: the writer finds the object by identity, not by its path (M4)
    clone.write({"clusters/team/my-hello.yaml": HELLO})
    wrote = clone.commit("hello for the team")
    clone.write({"clusters/team/other.md": "notes\n"})
    later = clone.commit("notes")
    clone.push()
    ledger.record([uid], _request("t-1", later, "Delivered", 1_900_000_000.0))
    ledger.record([uid], _request("t-2", base, "Stale", 1_900_000_100.0))  # newer, before it
    done = cli("trace", "configmap/hello", "-n", NS, "-o", "json")
    assert done.code == EXIT_OK, done
    record = done.json()
    assert record["object"]["kind"] == "ConfigMap" and record["object"]["inCluster"]
    [target] = record["gitTargets"]
    assert (target["namespace"], target["name"], target["repository"]) == (NS, "gt", url)
    assert target["file"] == "clusters/team/my-hello.yaml" and target["inGit"]
    assert target["tip"] == later
    assert target["lastCommit"]["sha"] == wrote
    assert target["lastCommit"]["author"] == "Ada Lovelace <ada@example.org>"
    assert target["lastCommit"]["subject"] == "hello for the team"
    applied = target["lastApplyRequest"]
    assert (applied["token"], applied["outcome"], applied["commit"]) == ("t-1", "Delivered", later)
    text = cli("trace", "ConfigMap/hello", "-n", NS)
    assert f"Last commit:   {wrote[:12]} hello for the team" in text.out
    assert "Author:        Ada Lovelace <ada@example.org>" in text.out
    assert f"Applied:       Delivered (ForeignCommit at {later[:12]}" in text.out


def test_trace_of_an_object_not_in_git_yet_says_where_it_would_go(
    api: Api, cli: Cli, githost: GitHost
) -> None:
    _tenant(api, githost.repo_url("team/config"))
    done = cli("trace", "configmaps/absent", "-n", NS, "-o", "json")
    assert done.code == EXIT_OK, done
    [target] = done.json()["gitTargets"]
    assert target["file"] == "clusters/team/team/configmaps/absent.yaml"
    assert (target["inGit"], target["lastCommit"], target["lastApplyRequest"]) == (
        False,
        None,
        None,
    )
    assert done.json()["object"]["inCluster"] is None


def test_trace_of_a_type_no_rule_selects_is_not_found(api: Api, cli: Cli, githost: GitHost) -> None:
    _tenant(api, githost.repo_url("team/config"))
    done = cli("trace", "secret/token", "-n", NS)
    assert done.code == EXIT_NOT_FOUND
    assert "no GitTarget mirrors secrets of namespace team" in done.err
    unknown = cli("trace", "gadget/x", "-n", NS)
    assert unknown.code == EXIT_NOT_FOUND and 'resource type "gadget"' in unknown.err


def _selecting_tenant(api: Api, url: str) -> None:
    """A GitTarget whose WatchRule's only configmaps rule selects ``mirror=yes``."""
    api.own("GitProvider", NS, "gp", {"url": url, "allowedBranches": ["main"]})
    spec = {"providerRef": {"name": "gp"}, "branch": "main", "path": "clusters/team"}
    api.own("GitTarget", NS, "gt", spec)
    selector = {
        "matchLabels": {"mirror": "yes"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["scratch"]}],
    }
    rules = [
        {"apiGroups": [""], "resources": ["secrets"]},
        {"apiGroups": [""], "resources": ["configmaps"], "objectSelector": selector},
    ]
    api.own("WatchRule", NS, "wr", {"targetRef": {"name": "gt"}, "rules": rules})


def _configmap(api: Api, name: str, labels: dict[str, str]) -> None:
    body = {"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}
    client.CoreV1Api(api.api).create_namespaced_config_map(NS, body)


def test_trace_says_an_object_a_rule_selector_excludes_is_not_mirrored(
    api: Api, cli: Cli, githost: GitHost
) -> None:
    """Issue 27 item 3 in ``trace``: a rule that names the type but whose objectSelector does
    not match the object's labels does not mirror it; one that matches does."""
    _selecting_tenant(api, githost.repo_url("team/config"))
    _configmap(api, "kept", {"mirror": "yes", "tier": "gold"})
    _configmap(api, "unlabelled", {})
    _configmap(api, "scratch", {"mirror": "yes", "tier": "scratch"})
    selector = "mirror=yes,tier notin (scratch)"
    kept = cli("trace", "configmap/kept", "-n", NS, "-o", "json")
    assert kept.code == EXIT_OK, kept
    [target] = kept.json()["gitTargets"]
    assert target["mirrored"] is True
    assert target["rules"] == [
        {"rule": "WatchRule team/wr rules[1]", "objectSelector": selector, "selects": True}
    ]
    assert kept.json()["object"]["labels"] == {"mirror": "yes", "tier": "gold"}
    for name in ("unlabelled", "scratch"):
        done = cli("trace", f"configmap/{name}", "-n", NS, "-o", "json")
        assert done.code == EXIT_OK, done
        [target] = done.json()["gitTargets"]
        assert target["mirrored"] is False, name
        assert target["rules"] == [
            {"rule": "WatchRule team/wr rules[1]", "objectSelector": selector, "selects": False}
        ]
        assert target["inGit"] is False
    text = cli("trace", "configmap/scratch", "-n", NS)
    assert (
        "Mirrored:      no: its labels match no objectSelector (WatchRule team/wr rules[1]: "
        f"{selector!r})"
    ) in text.out
    shown = cli("trace", "configmap/kept", "-n", NS)
    assert f"Mirrored:      yes, by WatchRule team/wr rules[1] (objectSelector {selector!r})" in (
        shown.out
    )
    gone = cli("trace", "configmap/gone", "-n", NS, "-o", "json")  # labels not known
    assert gone.json()["gitTargets"][0]["mirrored"] is None


def test_trace_an_object_any_rule_selects_is_mirrored_by_that_rule(
    api: Api, cli: Cli, githost: GitHost
) -> None:
    """Rules that name one type each select what they match: a rule without a selector
    selects every object, so the object is mirrored whatever the other rule's selector says;
    a cluster-scoped object is judged by its ClusterWatchRule's selector the same way."""
    _selecting_tenant(api, githost.repo_url("team/config"))
    rule = api.get("watchrules", NS, "wr")
    rule["spec"]["rules"].append({"apiGroups": [""], "resources": ["configmaps"]})
    api.custom.replace_namespaced_custom_object(GROUP, VERSION, NS, "watchrules", "wr", rule)
    _configmap(api, "unlabelled", {})
    done = cli("trace", "configmap/unlabelled", "-n", NS, "-o", "json")
    [target] = done.json()["gitTargets"]
    assert target["mirrored"] is True
    assert [r["selects"] for r in target["rules"]] == [False, True]
    api.create(
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ClusterWatchRule",
            "metadata": {"name": "namespaces"},
            "spec": {
                "targetRef": {"name": "gt", "namespace": NS},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["namespaces"],
                        "objectSelector": {"matchLabels": {"mirror": "yes"}},
                    }
                ],
            },
        }
    )
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "labelled", "labels": {"mirror": "yes"}},
        }
    )
    own = cli("trace", "namespace/labelled", "-o", "json")
    assert own.code == EXIT_OK, own
    assert own.json()["gitTargets"][0]["mirrored"] is True
    other = cli("trace", "namespace/team", "-o", "json")
    assert other.json()["gitTargets"][0]["mirrored"] is False
    assert (
        other.json()["gitTargets"][0]["rules"][0]["rule"] == "ClusterWatchRule namespaces rules[0]"
    )
