"""``suspend``/``resume``, ``reconcile`` and ``commit`` against the API double.

The watcher's side of ``reconcile`` and of ``spec.suspend`` is another change's; here the test
plays the controller (it sets the status the watcher would set), so the CLI's side is shown:
what it writes, what it waits for, and how it refuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.cli.errors import EXIT_NOT_FOUND, EXIT_OK, EXIT_TIMEOUT, EXIT_UNSUPPORTED
from services.cli.targets import RECONCILE_ANNOTATION
from tests.integration.cli.conftest import NS
from tests.integration.cli.harness import NOW, Api, Cli, sandbox_api

TARGET = {"providerRef": {"name": "gp"}, "branch": "main", "path": "clusters/team"}


def test_suspend_and_resume_set_and_unset_spec_suspend(api: Api, cli: Cli) -> None:
    api.own("GitTarget", NS, "gt", TARGET)
    done = cli("suspend", "target", "gt", "-n", NS)
    assert (done.code, done.out.strip()) == (EXIT_OK, "gittarget.gitopsreverser.io/gt suspended")
    assert api.get("gittargets", NS, "gt")["spec"]["suspend"] is True
    shown = cli("get", "targets", "-n", NS, "-o", "json").json()["items"]
    assert [row["suspended"] for row in shown] == [True]
    done = cli("resume", "target", "gt", "-n", NS)
    assert (done.code, done.out.strip()) == (EXIT_OK, "gittarget.gitopsreverser.io/gt resumed")
    assert api.get("gittargets", NS, "gt")["spec"]["suspend"] is False


def test_suspend_is_refused_when_the_installed_crd_has_no_spec_suspend(tmp_path: Path) -> None:
    with sandbox_api(tmp_path, suspend=False, handled=False) as server:
        api = Api(server.api_client())
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        api.own("GitTarget", NS, "gt", TARGET)
        before = api.get("gittargets", NS, "gt")
        refused = Cli(tmp_path / "kubeconfig")("suspend", "target", "gt", "-n", NS)
        assert refused.code == EXIT_UNSUPPORTED
        assert refused.out == ""
        assert "the installed GitTarget CRD has no spec.suspend" in refused.err
        assert "nothing was changed" in refused.err
        after = api.get("gittargets", NS, "gt")
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_missing_gittarget_is_not_found(api: Api, cli: Cli) -> None:
    for args in (("suspend", "target", "nope"), ("reconcile", "target", "nope")):
        missing = cli(*args, "-n", NS)
        assert missing.code == EXIT_NOT_FOUND, missing
        assert 'GitTarget "nope" not found in namespace team' in missing.err


def test_reconcile_sets_a_fresh_request_and_waits_until_the_watcher_handled_it(
    api: Api, cli: Cli
) -> None:
    api.own("GitTarget", NS, "gt", TARGET)
    expected = NOW.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    seen: list[str] = []

    def watcher(obj: dict[str, Any]) -> bool:
        asked = (obj["metadata"].get("annotations") or {}).get(RECONCILE_ANNOTATION)
        if asked is None:
            return False
        seen.append(asked)
        api.status("gittargets", NS, "gt", {"lastHandledReconcileAt": asked})
        return True

    with api.controller("gittargets", NS, watcher):
        done = cli("reconcile", "target", "gt", "-n", NS, "--wait", "--timeout", "30")
    assert done.code == EXIT_OK, done
    assert seen == [expected]
    assert done.out.splitlines() == [
        f"gittarget.gitopsreverser.io/gt annotated: {RECONCILE_ANNOTATION}={expected}",
        "gittarget.gitopsreverser.io/gt reconciled",
    ]
    status = api.get("gittargets", NS, "gt")["status"]
    assert status["lastHandledReconcileAt"] == expected


def test_reconcile_wait_times_out_when_nothing_handles_the_request(api: Api, cli: Cli) -> None:
    api.own("GitTarget", NS, "gt", TARGET)
    # an older request handled: not the one this run makes
    api.status("gittargets", NS, "gt", {"lastHandledReconcileAt": "2026-01-01T00:00:00.0Z"})
    late = cli("reconcile", "target", "gt", "-n", NS, "--wait", "--timeout", "1")
    assert late.code == EXIT_TIMEOUT
    assert "timed out after 1s waiting for status.lastHandledReconcileAt" in late.err
    annotations = api.get("gittargets", NS, "gt")["metadata"]["annotations"]
    assert annotations[RECONCILE_ANNOTATION] == NOW.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_commit_creates_a_commit_request_and_prints_its_sha(api: Api, cli: Cli) -> None:
    api.own("GitTarget", NS, "gt", TARGET)
    sha = "3f2a1c9" + "0" * 33
    asked: list[dict[str, Any]] = []

    def worker(obj: dict[str, Any]) -> bool:
        asked.append(obj["spec"])
        ready = {"type": "Ready", "status": "True", "reason": "Committed", "message": "pushed"}
        ready["lastTransitionTime"] = "2026-12-06T09:30:16Z"
        name = obj["metadata"]["name"]
        api.status("commitrequests", NS, name, {"sha": sha, "conditions": [ready]})
        return True

    with api.controller("commitrequests", NS, worker):
        done = cli("commit", "target", "gt", "-n", NS, "-m", "release 1", "--wait")
    assert (done.code, done.out.strip()) == (EXIT_OK, sha)
    assert asked == [{"targetRef": {"name": "gt"}, "message": "release 1", "closeDelaySeconds": 0}]


def test_commit_without_wait_prints_the_request_it_created(api: Api, cli: Cli) -> None:
    api.own("GitTarget", NS, "gt", TARGET)
    done = cli("commit", "target", "gt", "-n", NS, "-o", "json")
    assert done.code == EXIT_OK
    record = done.json()
    assert record["target"] == "gt" and record["name"].startswith("gt-")
    made = api.get("commitrequests", NS, record["name"])
    assert made["spec"]["targetRef"] == {"name": "gt"}
    assert "message" not in made["spec"]
