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
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from services.branch_worker.holds import SIGNING_RETRY_S
from services.branch_worker.signing import SIGNING_KEY_INVALID, SecretSigner, SigningUnavailable
from services.branch_worker.worker import BranchWorker, Stores
from services.watcher.signing import GENERATED, SIGNING_SECRET_NOT_OWNED
from shared.git.signing import PRIVATE_KEY, PUBLIC_KEY, generate_key, load_key
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.model.config import TargetConfig
from shared.model.ids import Branch, GitTargetUid
from shared.settings import Settings
from tests.configs import DEFAULT_COMMITTER, target_config
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


GENERATE: dict[str, Any] = {
    "commit": {"signing": {"secretRef": {"name": "signing"}, "generateWhenMissing": True}}
}


def _raw_secret(rig: Rig) -> dict[str, Any]:
    return rig.cluster.get("v1", "Secret", "signing", "team-a")


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("kubernetes.io/tls", {"tls.crt": b"certificate", "tls.key": b"its key"}),
        ("Opaque", {"token": b"s3cret"}),
        ("Opaque", {}),
    ],
    ids=["tls", "opaque", "empty"],
)
def test_generate_when_missing_never_writes_into_a_secret_it_did_not_create(
    rig: Rig, repo_url: str, kind: str, data: dict[str, bytes]
) -> None:
    """N11: fails before: the Secret (a TLS one, in the probe) got signing.key and
    signing.pub and our annotation, so whoever may write a GitTarget could have the product
    change any Secret of the namespace. Now the GitTarget is refused with a reason naming the
    problem, not served, and the Secret is not touched."""
    uid = mirror_setup(rig, repo_url, **GENERATE)
    rig.cluster.create({**_secret("team-a", "signing", data), "type": kind})
    before = _raw_secret(rig)
    rig.burst()
    rig.clock.now += 60
    rig.burst()
    validated = rig.cluster.conditions("GitTarget", "target", "team-a")["Validated"]
    assert (validated["status"], validated["reason"]) == ("False", SIGNING_SECRET_NOT_OWNED)
    assert "team-a/signing" in validated["message"] and GENERATED in validated["message"]
    after = _raw_secret(rig)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert (after.get("data"), after["metadata"].get("annotations")) == (
        before.get("data"),
        before["metadata"].get("annotations"),
    )
    held = rig.config.target(GitTargetUid(uid))
    assert held is not None and held.key_held
    assert "signingPublicKey" not in (_target(rig).get("status") or {})


def test_generate_when_missing_uses_a_key_the_user_put_in_the_secret(
    rig: Rig, repo_url: str
) -> None:
    """N11: a Secret of the user's that holds a key is used as it is (not generated, not
    marked)."""
    key = generate_key("mine")
    mirror_setup(rig, repo_url, **GENERATE)
    rig.cluster.create(_secret("team-a", "signing", {PRIVATE_KEY: key.private}))
    before = _raw_secret(rig)
    rig.burst()
    assert _target(rig)["status"]["signingPublicKey"] == key.public
    assert rig.cluster.conditions("GitTarget", "target", "team-a")["Validated"]["status"] == "True"
    after = _raw_secret(rig)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert GENERATED not in (after["metadata"].get("annotations") or {})


def test_generate_when_missing_refills_a_secret_it_created(rig: Rig, repo_url: str) -> None:
    """A Secret the product created (marked) whose key a person removed, after backing it up,
    gets a new key, as when it was first created."""
    mirror_setup(rig, repo_url, **GENERATE)
    rig.burst()
    first = _raw_secret(rig)
    assert first["metadata"]["annotations"][GENERATED] == "true"
    rig.cluster.patch("v1", "Secret", "signing", "team-a", {"data": None})
    rig.clock.now += 60
    rig.burst()
    data = _reader(rig).secret_data("team-a", "signing")
    assert data is not None
    key = load_key(data)
    assert data[PRIVATE_KEY] != base64.b64decode(first["data"][PRIVATE_KEY])
    assert _target(rig)["status"]["signingPublicKey"] == key.public


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
    Secret's content appears in the condition. The signed one stays registered with its
    branch, marked ``key_held`` (P6)."""
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
    # a missing Secret heals when it is created (Reconciling); a bad key needs a new one
    # (Stalled): kstatus reads Stalled as "a person must change something" (issue 26)
    stalled = "False" if reason == "SigningSecretNotFound" else "True"
    assert conditions["Stalled"]["status"] == stalled
    assert "not a key" not in str(conditions)
    held = rig.config.target(GitTargetUid(uid))  # not served, but kept on its branch (P6)
    assert held is not None and held.key_held
    assert uid not in [t.uid for t in rig.config.targets_of(held.ref.key)]
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


def _ls(githost: GitHost, name: str, repo: str = "team/config") -> dict[str, str]:
    """Files on the repository's main branch, by path, with their blob ids."""
    out = git("ls-tree", "-r", "main", cwd=githost.repo_path(repo))
    return {line.split("\t")[1]: line.split()[2] for line in out.splitlines() if name in line}


def _work(worker: BranchWorker, rig: Rig, done: Callable[[], bool]) -> None:
    """Wake the worker (each wake blocks on Redis or its pool, never on a timer), moving the
    shared clock on so windows close and held keys come due, until ``done`` holds."""
    for _ in range(100):
        worker.wake()
        worker.settle()
        if done():
            return
        rig.clock.now += SIGNING_RETRY_S / 2
    raise AssertionError("the branch worker never got there")


def test_a_key_broken_after_the_watchers_check_loses_no_edit(
    rig: Rig, repo_url: str, githost: GitHost, tmp_path: Path
) -> None:
    """P6, T4, M8, against the sandbox's API with the branch worker's real Secret read: the
    watcher checks the key and publishes an edit, then the Secret's key is broken before the
    branch worker commits. Nothing is pushed, the edit stays pending in Redis and the GitTarget
    shows SigningKeyInvalid (also once the watcher withdraws it); the Secret fixed, the watcher
    serves it again and the edit arrives in one commit that ``git verify-commit`` accepts."""
    key = generate_key("team-a")
    uid = GitTargetUid(mirror_setup(rig, repo_url, **SIGNING))
    rig.cluster.create(_secret("team-a", "signing", {PRIVATE_KEY: key.private}))
    rig.cluster.configmap("team-a", "app", {"a": "1"})
    rig.burst()
    reader = _reader(rig)
    settings = Settings(key_prefix=rig.prefix, work_dir=str(tmp_path / "work"))
    stores = Stores.build(rig.redis, settings)
    worker = BranchWorker(settings, stores, "w1", rig.clock, signer=SecretSigner(lambda: reader))
    bk = Branch(repo_url, "main").key
    stream = rig.keys.branch_events(bk)
    repo = githost.repo_path("team/config")

    def pending() -> int:
        return int(rig.redis.xpending(stream, "owners")["pending"])

    def held() -> list[GitTargetUid]:
        loop = worker.loops.get(bk)
        return loop.held() if loop is not None else []

    def settled() -> bool:
        loop = worker.loops.get(bk)
        return pending() == 0 and loop is not None and not loop.busy()

    try:
        _work(worker, rig, lambda: bool(_ls(githost, "app.yaml")) and pending() == 0)
        first = git("rev-parse", "main", cwd=repo).strip()
        allowed = tmp_path / "allowed_signers"
        allowed.write_text(key.allowed_signer(DEFAULT_COMMITTER.email))
        verify = ["git", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", "main"]
        assert subprocess.run(verify, cwd=repo, capture_output=True, check=False).returncode == 0

        rig.cluster.patch("v1", "ConfigMap", "app", "team-a", {"data": {"a": "2"}})
        rig.burst()  # the watcher checks the key (still good) and publishes the edit
        rig.cluster.patch(
            "v1",
            "Secret",
            "signing",
            "team-a",
            {"data": {PRIVATE_KEY: base64.b64encode(b"not a key").decode()}},
        )
        _work(worker, rig, lambda: held() == [uid])
        assert git("rev-parse", "main", cwd=repo).strip() == first  # nothing pushed
        assert pending() == 1
        refusal = rig.config.refusal(uid)
        assert refusal is not None and refusal["reason"] == SIGNING_KEY_INVALID

        rig.burst()  # the watcher now finds the key bad: the GitTarget is not served
        withdrawn = rig.config.target(uid)
        assert withdrawn is not None and withdrawn.key_held
        conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
        assert conditions["Validated"]["reason"] == SIGNING_KEY_INVALID
        rig.clock.now += 2 * SIGNING_RETRY_S
        worker.wake()
        worker.settle()
        assert git("rev-parse", "main", cwd=repo).strip() == first
        assert pending() == 1  # held, not dropped as a deleted GitTarget's would be

        rig.cluster.patch(
            "v1",
            "Secret",
            "signing",
            "team-a",
            {"data": {PRIVATE_KEY: base64.b64encode(key.private).decode()}},
        )
        rig.burst()  # served again
        _work(worker, rig, settled)
        assert git("rev-parse", "main~1", cwd=repo).strip() == first
        assert "a: '2'" in git("show", f"main:{next(iter(_ls(githost, 'app.yaml')))}", cwd=repo)
        assert subprocess.run(verify, cwd=repo, capture_output=True, check=False).returncode == 0
        assert "signing" not in rig.config.refusals(uid)
    finally:
        worker.shutdown()


def test_a_new_owner_keeps_the_held_edit_of_a_target_withdrawn_for_its_key(
    rig: Rig, githost: GitHost, tmp_path: Path
) -> None:
    """P6, M8, Q1: the owner holding a GitTarget's edit dies while the watcher does not serve
    the GitTarget for its key, and no other GitTarget writes to the branch. The GitTarget
    stays registered with its branch (published ``key_held``), so a new owner takes the branch
    instead of retiring it after the grace, keeps the edit pending, and once the Secret is
    fixed pushes it in a commit ``git verify-commit`` accepts. (Before: the branch had no
    GitTarget left, nobody took it, and it was retired with the edit after 30 s.)"""
    githost.create_repo("team/keyloss", files={"README.md": b"hello\n"})  # its own: the host
    repo_url = githost.repo_url("team/keyloss")  # is the module's
    key = generate_key("team-a")
    uid = GitTargetUid(mirror_setup(rig, repo_url, **SIGNING))
    rig.cluster.create(_secret("team-a", "signing", {PRIVATE_KEY: key.private}))
    rig.cluster.configmap("team-a", "app", {"a": "1"})
    rig.burst()
    reader = _reader(rig)
    settings = Settings(key_prefix=rig.prefix, work_dir=str(tmp_path / "work"))
    stores = Stores.build(rig.redis, settings)
    dead = BranchWorker(settings, stores, "w1", rig.clock, signer=SecretSigner(lambda: reader))
    heir: BranchWorker | None = None
    bk = Branch(repo_url, "main").key
    stream = rig.keys.branch_events(bk)
    repo = githost.repo_path("team/keyloss")

    def pending() -> int:
        return int(rig.redis.xpending(stream, "owners")["pending"])

    def bad_key(value: bytes) -> None:
        data = {PRIVATE_KEY: base64.b64encode(value).decode()}
        rig.cluster.patch("v1", "Secret", "signing", "team-a", {"data": data})

    try:
        _work(dead, rig, lambda: bool(_ls(githost, "app.yaml", "team/keyloss")) and pending() == 0)
        first = git("rev-parse", "main", cwd=repo).strip()
        rig.cluster.patch("v1", "ConfigMap", "app", "team-a", {"data": {"a": "2"}})
        rig.burst()  # the edit is published while the key is still good
        bad_key(b"not a key")
        _work(dead, rig, lambda: bk in dead.loops and dead.loops[bk].held() == [uid])
        rig.burst()  # the watcher finds the key bad: not served, but kept on its branch
        conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
        assert conditions["Validated"]["reason"] == SIGNING_KEY_INVALID
        config = rig.config.target(uid)
        assert config is not None and config.key_held
        held = pending()  # the edit (and the restarted watcher's listing)
        assert held >= 1

        rig.redis.delete(rig.keys.branch_lease(bk))  # the owner died: its lease expires
        other = Settings(key_prefix=rig.prefix, work_dir=str(tmp_path / "heir"))
        signer = SecretSigner(lambda: reader)
        heir = BranchWorker(other, Stores.build(rig.redis, other), "w2", rig.clock, signer=signer)
        for _ in range(16):  # well past the 30 s grace of a branch without GitTargets
            heir.wake()
            heir.settle()
            rig.clock.now += SIGNING_RETRY_S / 2
        rig.burst()
        assert bk in heir.loops  # taken over, not retired
        assert pending() == held
        assert git("rev-parse", "main", cwd=repo).strip() == first

        bad_key(key.private)
        rig.burst()  # served again

        def settled() -> bool:
            assert heir is not None
            loop = heir.loops.get(bk)
            return pending() == 0 and loop is not None and not loop.busy()

        _work(heir, rig, settled)
        assert git("rev-parse", "main~1", cwd=repo).strip() == first
        assert "a: '2'" in git(
            "show", f"main:{next(iter(_ls(githost, 'app.yaml', 'team/keyloss')))}", cwd=repo
        )
        allowed = tmp_path / "allowed_signers"
        allowed.write_text(key.allowed_signer(DEFAULT_COMMITTER.email))
        verify = ["git", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", "main"]
        assert subprocess.run(verify, cwd=repo, capture_output=True, check=False).returncode == 0
        assert not rig.config.target(uid).key_held  # type: ignore[union-attr]
    finally:
        dead.loops.clear()  # gone: nothing flushed or released on its behalf
        dead.shutdown()
        if heir is not None:
            heir.shutdown()
