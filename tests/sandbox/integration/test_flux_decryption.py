"""The kustomize-controller double decrypts SOPS objects (``spec.decryption``) before it
applies them, with the age identities of the Secret it names (``*.agekey`` entries): a file
the real sops 3.11 wrote (tests/sandbox/unit/data) reaches the API double as the plain Secret;
without the right identity the build fails and nothing is applied (P3). A folder's
``.sops.yaml`` never reaches the build: source-controller excludes ``**/.sops.yaml`` from every
artifact (fluxcd/pkg ``sourceignore`` ``ExcludeExtra``)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pyrage
import pytest
from kubernetes import client

from sandbox.flux.activity import APPLIED, FAILED, KUSTOMIZATION
from tests.sandbox.integration.flux_support import NAMESPACE, FakeClock, FluxEnv, open_env
from tests.sandbox.unit.test_flux_sops import IDENTITY

#: Written by the real sops 3.11 for IDENTITY's recipient: a Secret the API accepts.
APPLICABLE = (
    Path(__file__).parents[1] / "unit/data/applicable-secret-by-sops-3.11.0.yaml"
).read_text()

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path: Path) -> Iterator[FluxEnv]:
    files = {
        "deploy/db.sops.yaml": APPLICABLE,
        # a SOPS creation rule is no object: source-controller leaves it out of the artifact
        "deploy/.sops.yaml": "creation_rules:\n  - encrypted_regex: '^(data|stringData)$'\n",
    }
    yield from open_env(tmp_path, clock=FakeClock(), files=files)


def _key_secret(env: FluxEnv, identity: str) -> None:
    env.core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="sops-age"),
            data={"age.agekey": base64.b64encode(f"{identity}\n".encode()).decode()},
        ),
    )


def _start(env: FluxEnv) -> list[str]:
    env.create_source()
    env.create_kustomization(decryption={"provider": "sops", "secretRef": {"name": "sops-age"}})
    return [r.action for r in env.flux.reconcile_due() if r.kind == KUSTOMIZATION]


def test_an_encrypted_secret_is_applied_decrypted(env: FluxEnv) -> None:
    """P3: the cluster gets the plaintext values; the sops block is not applied."""
    _key_secret(env, IDENTITY)
    assert _start(env) == [APPLIED]
    secret = env.core.read_namespaced_secret("db", NAMESPACE)
    assert base64.b64decode(secret.data["password"]) == b"hunter2"
    assert base64.b64decode(secret.data["port"]) == b"5432"  # stringData, merged by the API
    assert secret.metadata.labels["tier"] == "backend"


def test_without_the_identity_nothing_is_applied(env: FluxEnv) -> None:
    """A decryption failure fails the build (Ready=False BuildFailed), the Secret is not made."""
    _key_secret(env, str(pyrage.x25519.Identity.generate()))
    assert _start(env) == [FAILED]
    ready = env.get(("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"))["status"]
    (condition,) = [c for c in ready["conditions"] if c["type"] == "Ready"]
    assert condition["reason"] == "BuildFailed" and "failed to decrypt" in condition["message"]
    with pytest.raises(client.exceptions.ApiException):
        env.core.read_namespaced_secret("db", NAMESPACE)
