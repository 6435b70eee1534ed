"""What a GitProvider's Secret becomes in git's environment, decided once (D3, R5).

docs/crds.md lists what the Secret may hold: ``username`` + ``password`` (basic), ``password``
alone (a token with an empty user), ``bearerToken``, or an SSH ``identity`` + ``known_hosts``.
Every caller (branch worker, dispatcher, watcher probe) goes through these functions.
"""

from __future__ import annotations

import base64
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from shared.git.auth import env_for_secret
from shared.git.credentials import (
    KnownHostsMissing,
    SecretMissing,
    environment_once,
    known_hosts_of,
    resolve,
    resolved_once,
    secret_of,
    with_known_hosts,
)
from shared.git.errors import GitPermanent
from shared.git.remote import SSH_OPTIONS

KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n-----END OPENSSH PRIVATE KEY-----\n"
KNOWN = b"[git.example]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIexample\n"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _header(secret: Mapping[str, bytes], tmp_path: Path) -> str:
    env = env_for_secret(secret, tmp_path / "ssh")
    assert env["GIT_CONFIG_COUNT"] == "1"
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert "GIT_SSH_COMMAND" not in env
    return env["GIT_CONFIG_VALUE_0"]


def test_basic_credentials_become_an_authorization_header(tmp_path: Path) -> None:
    header = _header({"username": b"bot\n", "password": b"s3cret\n"}, tmp_path)
    assert header == "Authorization: Basic " + base64.b64encode(b"bot:s3cret").decode()
    assert not (tmp_path / "ssh").exists()  # no SSH folder without an identity


def test_a_password_alone_is_a_token_with_an_empty_user(tmp_path: Path) -> None:
    header = _header({"password": b"tok"}, tmp_path)
    assert header == "Authorization: Basic " + base64.b64encode(b":tok").decode()


def test_a_bearer_token_wins_over_a_password(tmp_path: Path) -> None:
    header = _header({"bearerToken": b"tok\n", "password": b"p"}, tmp_path)
    assert header == "Authorization: Bearer tok"


@pytest.mark.parametrize("secret", [None, {}, {"unrelated": b"x"}])
def test_no_credentials_give_an_empty_environment(
    secret: Mapping[str, bytes] | None, tmp_path: Path
) -> None:
    assert env_for_secret(secret, tmp_path / "ssh") == {}


def test_an_ssh_identity_and_known_hosts_give_this_exact_ssh_command(tmp_path: Path) -> None:
    folder = tmp_path / "ssh"
    env = env_for_secret({"identity": KEY, "known_hosts": KNOWN}, folder)
    assert env == {
        "GIT_SSH_COMMAND": (
            f"ssh -i {folder}/identity -o IdentitiesOnly=yes "
            f"-o UserKnownHostsFile={folder}/known_hosts -o StrictHostKeyChecking=yes "
            "-o ConnectTimeout=15 -o ServerAliveInterval=15 -o ServerAliveCountMax=3 "
            "-o BatchMode=yes"
        )
    }
    assert (folder / "identity").read_bytes() == KEY
    assert (folder / "known_hosts").read_bytes() == KNOWN
    assert _mode(folder) == 0o700
    assert _mode(folder / "identity") == 0o600
    assert _mode(folder / "known_hosts") == 0o600


def test_without_known_hosts_ssh_is_not_told_to_trust_anything(tmp_path: Path) -> None:
    folder = tmp_path / "ssh"
    env = env_for_secret({"identity": KEY}, folder)
    assert shlex.split(env["GIT_SSH_COMMAND"]) == [
        "ssh", "-i", str(folder / "identity"), "-o", "IdentitiesOnly=yes", *SSH_OPTIONS,
    ]  # fmt: skip
    assert not (folder / "known_hosts").exists()


def test_a_path_with_spaces_stays_one_word_for_the_shell(tmp_path: Path) -> None:
    folder = tmp_path / "with space"
    env = env_for_secret({"identity": KEY}, folder)
    assert shlex.split(env["GIT_SSH_COMMAND"])[2] == str(folder / "identity")


def test_files_left_wide_open_are_narrowed_when_rewritten(tmp_path: Path) -> None:
    folder = tmp_path / "ssh"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    (folder / "identity").write_bytes(b"old")
    (folder / "identity").chmod(0o644)
    env_for_secret({"identity": KEY}, folder)
    assert _mode(folder) == 0o700
    assert _mode(folder / "identity") == 0o600
    assert (folder / "identity").read_bytes() == KEY


def test_ssh_and_http_credentials_in_one_secret_are_both_passed(tmp_path: Path) -> None:
    env = env_for_secret({"identity": KEY, "bearerToken": b"t"}, tmp_path / "ssh")
    assert env["GIT_CONFIG_VALUE_0"] == "Authorization: Bearer t"
    assert env["GIT_SSH_COMMAND"].startswith("ssh -i ")


class Secrets:
    """An injected secret reader that remembers what it was asked."""

    def __init__(self, stored: dict[tuple[str, str], dict[str, bytes]]) -> None:
        self.stored = stored
        self.asked: list[tuple[str, str]] = []

    def __call__(self, namespace: str, name: str) -> dict[str, bytes] | None:
        self.asked.append((namespace, name))
        return self.stored.get((namespace, name))


def test_no_secret_named_reads_nothing_and_needs_no_credentials(tmp_path: Path) -> None:
    read = Secrets({})
    assert secret_of(read, "team", "") == {}
    assert secret_of(read, "team", None) == {}
    assert resolve(read, "team", "", tmp_path) == {}
    assert read.asked == []


def test_the_named_secret_is_read_in_the_providers_namespace(tmp_path: Path) -> None:
    read = Secrets({("team", "creds"): {"identity": KEY, "known_hosts": KNOWN}})
    env = resolve(read, "team", "creds", tmp_path / "ssh")
    assert read.asked == [("team", "creds")]
    assert f"-i {tmp_path}/ssh/identity" in env["GIT_SSH_COMMAND"]


def test_a_named_secret_that_is_missing_is_a_permanent_git_failure(tmp_path: Path) -> None:
    read = Secrets({})
    with pytest.raises(SecretMissing, match="Secret team/gone not found") as raised:
        resolve(read, "team", "gone", tmp_path)
    assert isinstance(raised.value, GitPermanent)


def test_a_reader_failure_reaches_the_caller_unchanged() -> None:
    def broken(namespace: str, name: str) -> dict[str, bytes] | None:
        raise ConnectionError(f"no API for {namespace}/{name}")

    with pytest.raises(ConnectionError, match="team/creds"):
        secret_of(broken, "team", "creds")


def test_a_one_call_environment_deletes_the_key_afterwards() -> None:
    with environment_once({"identity": KEY}) as env:
        identity = Path(shlex.split(env["GIT_SSH_COMMAND"])[2])
        assert identity.read_bytes() == KEY
        assert _mode(identity.parent) == 0o700
    assert not identity.exists()
    assert not identity.parent.exists()


def test_a_one_call_resolution_reads_the_secret_and_cleans_up() -> None:
    read = Secrets({("team", "creds"): {"identity": KEY}})
    with resolved_once(read, "team", "creds") as env:
        identity = Path(shlex.split(env["GIT_SSH_COMMAND"])[2])
        assert identity.is_file()
    assert not identity.exists()
    with resolved_once(read, "team", None) as env:
        assert env == {}


@pytest.mark.parametrize("key", ["identity", "sshPrivateKey", "ssh-privatekey"])
def test_each_dialects_ssh_key_name_gives_the_same_command(key: str, tmp_path: Path) -> None:
    """Flux's ``identity``, Argo CD's ``sshPrivateKey``, kubernetes.io/ssh-auth's
    ``ssh-privatekey`` (facts: upstream-gitops-reverser.md, credentials Secret dialects)."""
    folder = tmp_path / "ssh"
    env = env_for_secret({key: KEY, "ssh_known_hosts": KNOWN}, folder)
    assert shlex.split(env["GIT_SSH_COMMAND"])[:4] == ["ssh", "-i", f"{folder}/identity", "-o"]
    assert (folder / "identity").read_bytes() == KEY
    assert (folder / "known_hosts").read_bytes() == KNOWN


def test_an_empty_value_counts_as_an_absent_key(tmp_path: Path) -> None:
    assert env_for_secret({"identity": b"", "password": b" \n", "bearerToken": b""}, tmp_path) == {}
    env = env_for_secret({"bearerToken": b"", "password": b"pat"}, tmp_path)
    assert env["GIT_CONFIG_VALUE_0"] == "Authorization: Basic " + base64.b64encode(b":pat").decode()


class Objects:
    """An injected ConfigMap/Secret reader by (namespace, kind, name)."""

    def __init__(self, stored: dict[tuple[str, str, str], dict[str, bytes]]) -> None:
        self.stored = stored
        self.asked: list[tuple[str, str, str]] = []

    def __call__(self, namespace: str, kind: str, name: str) -> dict[str, bytes] | None:
        self.asked.append((namespace, kind, name))
        return self.stored.get((namespace, kind, name))


def test_known_hosts_ref_is_read_in_the_providers_namespace_by_kind() -> None:
    read = Objects(
        {
            ("team", "ConfigMap", "hosts"): {"ssh_known_hosts": KNOWN},
            ("team", "Secret", "hosts"): {"known_hosts": b"secret " + KNOWN},
        }
    )
    assert known_hosts_of(read, "team", "") is None
    assert read.asked == []
    assert known_hosts_of(read, "team", "ConfigMap/hosts") == KNOWN
    assert known_hosts_of(read, "team", "Secret/hosts") == b"secret " + KNOWN
    assert read.asked == [("team", "ConfigMap", "hosts"), ("team", "Secret", "hosts")]


@pytest.mark.parametrize(
    ("stored", "says"),
    [({}, "not found"), ({("team", "ConfigMap", "hosts"): {"other": b"x"}}, "has no known_hosts")],
)
def test_a_known_hosts_ref_without_hosts_fails_closed(
    stored: dict[tuple[str, str, str], dict[str, bytes]], says: str
) -> None:
    with pytest.raises(KnownHostsMissing, match=says) as raised:
        known_hosts_of(Objects(stored), "team", "ConfigMap/hosts")
    assert isinstance(raised.value, GitPermanent)


def test_the_secrets_own_known_hosts_come_before_the_refs(tmp_path: Path) -> None:
    read = Secrets({("team", "own"): {"identity": KEY, "known_hosts": KNOWN}})
    read.stored[("team", "bare")] = {"sshPrivateKey": KEY}
    resolve(read, "team", "own", tmp_path / "a", hosts=b"from the ref")
    assert (tmp_path / "a" / "known_hosts").read_bytes() == KNOWN
    resolve(read, "team", "bare", tmp_path / "b", hosts=b"from the ref")
    assert (tmp_path / "b" / "known_hosts").read_bytes() == b"from the ref"
    assert with_known_hosts({}, None) == {}
