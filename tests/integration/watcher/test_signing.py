"""``spec.commit.signing`` as the watcher and the branch worker's Secret read see it (P6).

Against the sandbox's Kubernetes API: a GitTarget whose Secret holds a key is served and
shows the key's public half in ``status.signingPublicKey``; ``generateWhenMissing`` creates the
key in the Secret; a Secret that is missing or holds no usable key is ``Validated=False``
(``SigningSecretNotFound`` / ``SigningKeyInvalid``) and not served, while a GitTarget of the
same branch without signing is (T4); the branch worker's ``SecretSigner`` reads the key from
the GitTarget's own namespace only (T1).
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from services.branch_worker.signing import SecretSigner, SigningUnavailable
from shared.git.signing import PRIVATE_KEY, PUBLIC_KEY, generate_key, load_key
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.model.config import TargetConfig
from shared.model.ids import GitTargetUid
from tests.configs import target_config
from tests.integration.watcher.harness import (
    CONFIGMAPS,
    Rig,
    git_target,
    mirror_setup,
    watch_rule,
)

pytestmark = pytest.mark.integration

SIGNING: dict[str, Any] = {"commit": {"signing": {"secretRef": {"name": "signing"}}}}


def _secret(ns: str, name: str, data: dict[str, bytes]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def _reader(rig: Rig) -> CrdReader:
    return CrdReader(KubeClient(rig.cluster.server.api_client(), "local"))


def _target(rig: Rig, name: str = "target", ns: str = "team-a") -> dict[str, Any]:
    return rig.cluster.get("gitopsreverser.io/v1alpha1", "GitTarget", name, ns)


def test_a_key_in_the_secret_is_served_and_its_public_half_published(
    rig: Rig, repo_url: str
) -> None:
    """P6: status.signingPublicKey is the key's public half, and the served config names the
    Secret (only its name reaches Redis, T3)."""
    key = generate_key("team-a")
    uid = mirror_setup(rig, repo_url, **SIGNING)
    rig.cluster.create(_secret("team-a", "signing", {PRIVATE_KEY: key.private}))
    rig.burst()
    target = _target(rig)
    assert target["status"]["signingPublicKey"] == key.public
    conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert conditions["Validated"]["status"] == "True"
    config = rig.config.target(GitTargetUid(uid))
    assert config is not None and config.signing_secret == "signing"
    stored = b"".join(v for _, v in sorted(_redis_values(rig)))
    assert key.private.split(b"\n")[1] not in stored


def _redis_values(rig: Rig) -> list[tuple[bytes, bytes]]:
    found: list[tuple[bytes, bytes]] = []
    for name in rig.redis.scan_iter(f"{rig.prefix}*"):
        kind = rig.redis.type(name)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "hash":
            for k, v in rig.redis.hgetall(name).items():
                found.append((_b(k), _b(v)))
        elif kind == "string":
            found.append((_b(name), _b(rig.redis.get(name) or b"")))
    return found


def _b(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def test_generate_when_missing_creates_the_key_in_the_secret(rig: Rig, repo_url: str) -> None:
    """P6: with generateWhenMissing the Secret is created with an ed25519 key, whose public
    half the status shows; a second pass keeps the same key."""
    signing = {"secretRef": {"name": "signing"}, "generateWhenMissing": True}
    mirror_setup(rig, repo_url, commit={"signing": signing})
    rig.burst()
    data = _reader(rig).secret_data("team-a", "signing")
    assert data is not None
    key = load_key(data)
    assert key.public.startswith("ssh-ed25519 ")
    assert data[PUBLIC_KEY].decode().strip() == key.public
    assert _target(rig)["status"]["signingPublicKey"] == key.public
    rig.clock.now += 60
    rig.burst()
    again = _reader(rig).secret_data("team-a", "signing")
    assert again == data


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "SigningSecretNotFound"),
        ({PRIVATE_KEY: b"not a key"}, "SigningKeyInvalid"),
        ({"other": b"x"}, "SigningKeyInvalid"),
    ],
)
def test_a_bad_key_fails_only_that_git_target(
    rig: Rig, repo_url: str, data: dict[str, bytes] | None, reason: str
) -> None:
    """T4: the signed GitTarget is Validated=False with the reason and not served; another
    GitTarget of the same namespace and branch (another folder) is served; nothing of the
    Secret's content appears in the condition."""
    uid = mirror_setup(rig, repo_url, **SIGNING)
    if data is not None:
        rig.cluster.create(_secret("team-a", "signing", data))
    other = rig.cluster.create(git_target("team-a", name="plain", path="clusters/plain"))
    rig.cluster.create(watch_rule("team-a", CONFIGMAPS, name="plain", target="plain"))
    rig.burst()
    conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert (conditions["Validated"]["status"], conditions["Validated"]["reason"]) == (
        "False",
        reason,
    )
    assert conditions["Stalled"]["status"] == "True"
    assert "not a key" not in str(conditions)
    assert rig.config.target(GitTargetUid(uid)) is None
    assert "signingPublicKey" not in (_target(rig).get("status") or {})
    assert rig.config.target(GitTargetUid(other["metadata"]["uid"])) is not None


def test_the_signer_reads_the_key_of_the_targets_own_namespace(rig: Rig, repo_url: str) -> None:
    """T1: the branch worker reads spec.commit.signing's Secret in the GitTarget's namespace;
    a Secret of that name in another namespace is never used."""
    key = generate_key("team-b")
    for ns in ("team-a", "team-b"):
        rig.cluster.namespace(ns)
    rig.cluster.create(_secret("team-b", "signing", {PRIVATE_KEY: key.private}))
    reader = _reader(rig)
    signer = SecretSigner(lambda: reader)
    mine = target_config(GitTargetUid("u1"), "team-b", "gt", repo_url, "main", path="x")
    theirs = target_config(GitTargetUid("u2"), "team-a", "gt", repo_url, "main", path="y")
    with signer(_signed(mine)) as path:
        assert path is not None
        assert load_key({PRIVATE_KEY: path.read_bytes()}).public == key.public
    assert not path.exists()
    with pytest.raises(SigningUnavailable) as refused, signer(_signed(theirs)):
        pass
    assert refused.value.permanent
    assert "team-a/signing" in str(refused.value)
    with signer(mine) as nothing:  # a GitTarget without signing: no Secret read, no file
        assert nothing is None


def _signed(config: TargetConfig) -> TargetConfig:
    return dataclasses.replace(config, signing_secret="signing")
