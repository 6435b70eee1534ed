"""``get targets|providers|rules``: the cluster's Ready condition and message beside what only
Redis knows (last push, what the applier is owed), as a table and as json/yaml."""

from __future__ import annotations

from datetime import timedelta

import redis
import yaml

from services.cli.errors import EXIT_OK
from tests.integration.cli.conftest import NS
from tests.integration.cli.harness import NOW, Api, Cli
from tests.integration.cli.redis_state import owe_foreign_commit, publish_target, pushed, stores

READY = {"type": "Ready", "lastTransitionTime": "2026-12-06T09:00:00Z"}


def _targets(api: Api) -> tuple[str, str]:
    """Two GitTargets: ``apps`` Ready, ``infra`` not, with the watcher's conditions."""
    uids = []
    for name, status, reason, message in (
        ("apps", "True", "Pushed", "pushed 3f2a1c9: 3 objects"),
        ("infra", "False", "GitProviderNotFound", "GitProvider team/missing not found"),
    ):
        spec = {"providerRef": {"name": "gp"}, "branch": "main", "path": f"clusters/{name}"}
        made = api.own("GitTarget", NS, name, spec)
        cond = READY | {"status": status, "reason": reason, "message": message}
        api.status("gittargets", NS, name, {"conditions": [cond]})
        uids.append(made["metadata"]["uid"])
    return uids[0], uids[1]


def test_get_targets_shows_ready_message_last_push_and_what_is_owed(
    api: Api, cli: Cli, redis_client: redis.Redis, key_prefix: str
) -> None:
    apps, _infra = _targets(api)
    s = stores(redis_client, key_prefix)
    config = publish_target(s, apps, "apps")
    pushed(s, config, "a" * 40, at=(NOW - timedelta(minutes=5)).timestamp())
    owe_foreign_commit(s, apps, "b" * 40)
    done = cli("get", "targets", "-n", NS)
    assert done.code == EXIT_OK, done
    lines = [line.split() for line in done.out.splitlines()]
    assert lines[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "SUSPENDED", "LAST", "PUSH", "OWED"]
    assert done.out.splitlines()[1].split("   ")[0] == "team"
    apps_line, infra_line = done.out.splitlines()[1:]
    assert "True" in apps_line and "pushed 3f2a1c9: 3 objects" in apps_line
    assert "5m ago" in apps_line and apps_line.rstrip().endswith("ForeignCommit")
    assert "False" in infra_line and "GitProvider team/missing not found" in infra_line
    assert infra_line.rstrip().endswith("not served")
    rows = {r["name"]: r for r in cli("get", "targets", "-n", NS, "-o", "json").json()["items"]}
    assert rows["apps"]["lastPush"] == (NOW - timedelta(minutes=5)).isoformat()
    assert rows["apps"]["branch"]["tip"] == "a" * 40
    assert rows["apps"]["owed"] == "ForeignCommit"
    assert rows["infra"]["lastPush"] is None
    as_yaml = yaml.safe_load(cli("get", "targets", "-n", NS, "-o", "yaml").out)
    assert [r["name"] for r in as_yaml["items"]] == ["apps", "infra"]


def test_get_targets_without_redis_shows_the_cluster_and_warns(api: Api, cli: Cli) -> None:
    _targets(api)
    unreachable = ("--redis-url", "redis://127.0.0.1:1/0", "--key-prefix", "x")
    done = cli("get", "targets", "-n", NS, *unreachable, redis=False)
    assert done.code == EXIT_OK
    assert "warning: no Redis columns: Redis: Redis unreachable" in done.err
    apps = done.out.splitlines()[1]
    assert "pushed 3f2a1c9: 3 objects" in apps and apps.rstrip().endswith("?")


def test_get_providers_and_rules(api: Api, cli: Cli) -> None:
    api.own(
        "GitProvider",
        NS,
        "gp",
        {"url": "https://git.example/team/config.git", "allowedBranches": ["main"]},
    )
    api.own(
        "WatchRule",
        NS,
        "wr",
        {
            "targetRef": {"name": "apps"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"]}],
        },
    )
    msg = "GitTarget team/apps not found"
    cond = READY | {"status": "False", "reason": "GitTargetNotFound", "message": msg}
    api.status("watchrules", NS, "wr", {"conditions": [cond]})
    providers = cli("get", "providers", "-n", NS, "-o", "json").json()["items"]
    assert providers == [
        {
            "namespace": NS,
            "name": "gp",
            "url": "https://git.example/team/config.git",
            "ready": "Unknown",
            "status": "waiting for the watcher",
        }
    ]
    rules = cli("get", "rules", "-A")
    assert rules.code == EXIT_OK
    header, row = rules.out.splitlines()
    assert header.split() == ["KIND", "NAMESPACE", "NAME", "TARGET", "READY", "STATUS"]
    assert row.split()[:5] == ["WatchRule", NS, "wr", "apps", "False"] and msg in row


def test_get_in_an_empty_namespace_says_so_on_stderr(api: Api, cli: Cli) -> None:
    done = cli("get", "targets", "-n", NS)
    assert (done.code, done.out, done.err) == (EXIT_OK, "", "No resources found.\n")
