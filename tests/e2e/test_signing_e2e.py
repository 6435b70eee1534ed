"""Signed commits with every process running (P6): a GitTarget asks for a generated key, the
watcher stores it in the Secret and publishes its public half, and the branch worker signs
each commit with it, as a person checks with ``git verify-commit``.

Also a ClusterWatchRule: a Namespace's labels, edited through the API, reach the platform
tenant's folder under ``_cluster/``.
"""

from __future__ import annotations

import subprocess

import pytest
from kubernetes import client

from tests.e2e.conftest import CONFIGMAPS, GROUP, VERSION, WAIT_S, Launcher, Tenant, Tenants
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

COMMITTER_EMAIL = "noreply@gitopsreverser.io"


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return launcher.start(steady_tick="1s", reconcile_period="1s", lease_period="3s")


def _public_key(t: Tenant) -> str:
    return str((t.target().get("status") or {}).get("signingPublicKey") or "")


def _verify(t: Tenant, rev: str, public_key: str) -> subprocess.CompletedProcess[str]:
    allowed = t.bare / "allowed_signers_for_test"
    allowed.write_text(f'{COMMITTER_EMAIL} namespaces="git" {public_key}\n')
    return subprocess.run(
        ["git", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", rev],
        cwd=t.bare,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_generated_key_signs_every_commit(tenants: Tenants) -> None:
    """P6: status.signingPublicKey appears, the Secret holds the key, and the commit of an
    API edit verifies against that public key (and not against another)."""
    signing = {"secretRef": {"name": "signing"}, "generateWhenMissing": True}
    t = tenants.make(
        "signed",
        rules=[CONFIGMAPS],
        commit_window="0s",
        target_spec={"commit": {"signing": signing}},
    )
    wait_until(lambda: _public_key(t).startswith("ssh-ed25519 "), WAIT_S, "status.signingPublicKey")
    secret = t.system.core.read_namespaced_secret("signing", t.namespace)
    assert secret.data is not None and set(secret.data) == {"signing.key", "signing.pub"}
    t.wait_watching("/configmaps")
    base = t.tip()
    t.system.core.create_namespaced_config_map(
        t.namespace,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="app"), data={"a": "1"}),
    )
    tip = t.wait_tip_moved(base)
    assert "clusters/signed/signed/configmaps/app.yaml" in t.files()
    checked = _verify(t, tip, _public_key(t))
    assert checked.returncode == 0, checked.stderr
    assert _verify(t, base, _public_key(t)).returncode != 0  # the seed commit is unsigned


def test_a_cluster_watch_rule_mirrors_a_namespace(tenants: Tenants) -> None:
    """P6: with the ClusterProvider's allowance, a ClusterWatchRule on namespaces writes the
    labelled Namespace under _cluster/ in the platform tenant's folder."""
    t = tenants.make("platform", commit_window="0s")
    t.system.custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "clusterproviders",
        "default",
        {"spec": {"clusterScoped": {"accessFrom": {"names": ["platform"]}}}},
    )
    t.system.create(
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ClusterWatchRule",
            "metadata": {"name": "namespaces"},
            "spec": {
                "targetRef": {"name": "gt", "namespace": "platform"},
                "rules": [{"apiGroups": [""], "resources": ["namespaces"]}],
            },
        }
    )
    path = "clusters/platform/_cluster/namespaces/platform.yaml"
    wait_until(lambda: path in t.files(), WAIT_S, path)
    t.system.core.patch_namespace("platform", {"metadata": {"labels": {"tier": "gold"}}})
    wait_until(lambda: "tier: gold" in t.show(path), WAIT_S, "the label in Git")
