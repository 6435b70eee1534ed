"""GitOps-safe (issue 24 §4): the chart renders nothing random, so a tool that renders it
again and again (Argo CD renders offline, without ``lookup``) never changes a Secret.

The built-in Redis's password and the SOPS fingerprint key are made in the cluster, once, by
the product: the Redis pod's init container (``services.redis_auth``) and the watcher
(``services.watcher.encryption.ensure_master``), each a create-if-absent
(``shared.kube.install_secrets.ensure_secret_key``). The install below is Argo CD's: render,
apply, the pods start, render again, apply again, the pods restart; the Secrets stay as they
were.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from services.redis_auth import __main__ as redis_auth
from services.watcher.encryption import FINGERPRINT_KEY, ensure_master
from shared.kube.api import KubeClient, Obj
from shared.kube.errors import Conflict
from shared.kube.install_secrets import ensure_secret_key
from shared.kube.kinds import SECRETS
from tests.integration.chart.harness import ChartRun, user_of
from tests.integration.chart.render import NAMESPACE, RELEASE, render, render_files
from tests.integration.chart.test_chart_runs import chart_running
from tests.integration.chart.test_render import VALUE_SETS

pytestmark = [pytest.mark.integration]
REDIS = f"{RELEASE}-gitops-reverser-redis"
FINGERPRINT = f"{RELEASE}-gitops-reverser-sops-fingerprint"


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_two_renders_are_byte_identical(name: str) -> None:
    """Same values, same bytes, file by file (NOTES.txt too)."""
    first = render_files(VALUE_SETS[name])
    assert first == render_files(VALUE_SETS[name])
    assert first


def test_the_chart_renders_no_generated_secret() -> None:
    """Only a Secret the user's values fully determine (an external Redis URL) is rendered."""
    assert not render().of_kind("Secret")
    external = render(VALUE_SETS["external-flux"])
    assert [s["metadata"]["name"] for s in external.of_kind("Secret")] == [REDIS]


def _secrets(run: ChartRun) -> dict[str, tuple[str, dict[str, str]]]:
    found = client.CoreV1Api(run.api).list_namespaced_secret(NAMESPACE).items
    return {s.metadata.name: (s.metadata.resource_version, dict(s.data or {})) for s in found}


def _as(run: ChartRun, account: str) -> KubeClient:
    token = run.tokens[user_of(NAMESPACE, account)]
    return KubeClient(run.kube.api_client(token), "local")


def _start_pods(run: ChartRun) -> bytes | None:
    """What the cluster does after a sync: Redis's pod starts (its init container first); the
    watcher, with a GitTarget that encrypts, reads (or creates) the fingerprint key."""
    run.run_init("StatefulSet", REDIS)
    return ensure_master(_as(run, f"{RELEASE}-gitops-reverser-watcher"), NAMESPACE, FINGERPRINT)


def test_an_argo_cd_style_install_changes_no_secret(tmp_path: Path) -> None:
    """Render, apply, start; render again, apply again, restart: no Secret changes, and Redis's
    config file and every process's Redis URL hold the one password the Secret has."""
    values: dict[str, Any] = {"receiver": {"enabled": True}, "dashboard": {"enabled": True}}
    first = render(values)
    with chart_running(tmp_path, first) as run:
        key = _start_pods(run)
        before = _secrets(run)
        assert set(before) == {REDIS, FINGERPRINT}
        assert key and base64.b64decode(before[FINGERPRINT][1][FINGERPRINT_KEY]) == key
        again = render(values)
        assert again == first
        run.apply(again)
        assert _start_pods(run) == key
        assert _secrets(run) == before
        password = base64.b64decode(before[REDIS][1]["password"]).decode()
        conf = (run.home(REDIS) / "auth" / "auth.conf").read_text()
        assert conf == f"requirepass {password}\n"
        assert (run.home(REDIS) / "auth" / "auth.conf").stat().st_mode & 0o077 == 0
        for component in ("watcher", "branch-worker", "dispatcher", "receiver", "dashboard"):
            container = first.container(component)
            env = run.environment(container)
            url = env.get("GITOPS_REVERSER_REDIS_URL") or env["RQ_DASHBOARD_REDIS_URL"]
            assert url == f"redis://:{password}@{REDIS}.{NAMESPACE}.svc:6379/0", component
        assert not run.audit.denied(user_of(NAMESPACE, REDIS))


def _auth(run: ChartRun, out: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    """services.redis_auth as Redis's ServiceAccount, in this process."""
    kubeconfig = out.parent / "kubeconfig"
    run.kube.write_kubeconfig(kubeconfig, token=run.tokens[user_of(NAMESPACE, REDIS)])
    monkeypatch.setenv("GITOPS_REVERSER_KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("GITOPS_REVERSER_NAMESPACE", NAMESPACE)
    return redis_auth.main([*args, "--out", str(out)])


def test_a_users_redis_password_is_read_never_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """redis.auth.existingSecret: the init container may only read it; the Secret as given. A
    missing one, or a password that cannot sit in a redis:// URL, stops it with the reason."""
    values = {"redis": {"auth": {"existingSecret": "mine", "existingSecretKey": "pw"}}}
    rendered = render(values)
    role = rendered.one("Role", f"{RELEASE}-gitops-reverser-redis-auth")
    assert role["rules"][0]["verbs"] == ["get"]
    with chart_running(tmp_path, rendered) as run:
        out = tmp_path / "check" / "auth.conf"
        out.parent.mkdir()
        assert _auth(run, out, monkeypatch, "--secret", "mine", "--key", "pw") == 1
        assert "has no key 'pw'" in caplog.text and not out.exists()
        core = client.CoreV1Api(run.api)
        for name, value in (("bad", "a@b:c/d-0123456789"), ("mine", "a-users-own-password-0123")):
            secret = client.V1Secret(
                metadata=client.V1ObjectMeta(name=name), string_data={"pw": value}
            )
            core.create_namespaced_secret(NAMESPACE, secret)
        assert _auth(run, out, monkeypatch, "--secret", "bad", "--key", "pw") == 1
        assert "0-9 . _ ~ - only" in caplog.text and not out.exists()
        run.run_init("StatefulSet", REDIS)
        conf = (run.home(REDIS) / "auth" / "auth.conf").read_text()
        assert conf == "requirepass a-users-own-password-0123\n"
        assert set(_secrets(run)) == {"mine", "bad"}


class _Rival(KubeClient):
    """A client that loses every race: another process creates the Secret (with its own value)
    just before this one's create reaches the API."""

    def __init__(self, inner: KubeClient, theirs: Mapping[str, str]) -> None:
        self.__dict__.update(inner.__dict__)
        self._theirs = theirs

    def create(self, res: Any, namespace: str, body: Obj) -> Obj:
        rival = {**body, "data": dict(self._theirs)}
        super().create(res, namespace, rival)
        return super().create(res, namespace, body)


def test_a_lost_race_reads_the_winners_value(tmp_path: Path) -> None:
    """Two processes create the same Secret at once: the loser's 409 is not an error, and it
    ends with the winner's value (every process agrees on one key)."""
    with chart_running(tmp_path, render()) as run:
        admin = KubeClient(run.api, "local")
        theirs = base64.b64encode(b"their-key").decode()
        rival = _Rival(admin, {"key": theirs})
        made = ensure_secret_key(
            rival, NAMESPACE, "raced", "key", make=lambda: b"my-key", annotations={}
        )
        assert made == b"their-key"
        stored = admin.get(SECRETS, NAMESPACE, "raced")
        assert stored["data"] == {"key": theirs}
        # a Secret of that name without the key is someone else's: refused, left as it is
        with pytest.raises(Conflict, match="without the key 'other'"):
            ensure_secret_key(admin, NAMESPACE, "raced", "other", make=lambda: b"x", annotations={})
        assert admin.get(SECRETS, NAMESPACE, "raced")["data"] == {"key": theirs}
