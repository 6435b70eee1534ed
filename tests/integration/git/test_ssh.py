"""Git over ``ssh://`` with the GitProvider's identity, proven without an SSH server (D3).

The sandbox's fake ``ssh`` (``sandbox/githost/fake_ssh.py``) stands where OpenSSH's client
would: the first tests pin it to the contract git documents for that program, the rest show
that the environment ``shared.git`` builds from a Secret makes git send the right identity and
trust only the Secret's known hosts, for a tip read and for a fetch and push of a working copy.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from sandbox.githost.ssh_host import FakeSshHost
from services.watcher.probe import CONNECTION_FAILED, Prober
from shared.git.auth import env_for_secret
from shared.git.errors import GitError
from shared.git.remote import ls_remote
from shared.git.workspace import Committer, Workspace
from shared.model.crds import parse_git_provider
from tests.integration.git.ssh_support import (
    CREATED_AT,
    KEY,
    OTHER_KEY,
    REPO,
    SshRemote,
    git_out,
    serve_over_ssh,
)

pytestmark = pytest.mark.integration

OK = "ok"
HOST_KEY_UNKNOWN = "Host key verification failed."
KEY_REFUSED = "git@sandbox.test: Permission denied (publickey)."


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SshRemote:
    return serve_over_ssh(tmp_path / "ssh-host", monkeypatch)


def _hand_written_command(remote: SshRemote, folder: Path, mode: int = 0o600) -> list[str]:
    folder.mkdir(mode=0o700)
    (folder / "id").write_bytes(KEY)
    (folder / "id").chmod(mode)
    (folder / "kh").write_bytes(remote.host.known_hosts)
    return [
        "ssh", "-i", str(folder / "id"), "-o", f"UserKnownHostsFile={folder / 'kh'}",
        "-o", "StrictHostKeyChecking=yes",
    ]  # fmt: skip


def _ssh_env(command: list[str]) -> dict[str, str]:
    return {"GIT_SSH_COMMAND": shlex.join(command)}


def _git_words(argv: list[str], ours: list[str]) -> list[str]:
    """What git itself added after the words of GIT_SSH_COMMAND."""
    assert argv[: len(ours)] == ours
    added = argv[len(ours) :]
    if added[:2] == ["-o", "SendEnv=GIT_PROTOCOL"]:  # git asks for protocol v2 this way
        added = added[2:]
    return added


def test_git_runs_the_fake_as_it_documents_for_an_openssh_client(
    remote: SshRemote, tmp_path: Path
) -> None:
    """git-config(1) ``ssh.variant``: an OpenSSH-like program gets ``[-p port] [-4] [-6]
    [-o option] [username@]host command`` after the words of ``GIT_SSH_COMMAND``, which git runs
    through the shell; gitprotocol-pack(5) "SSH Transport": the command is
    ``git-upload-pack '<path>'`` to fetch and ``git-receive-pack '<path>'`` to push."""
    ours = _hand_written_command(remote, tmp_path / "keys")
    listed = git_out("ls-remote", remote.url, "refs/heads/main", env=_ssh_env(ours))
    assert listed == f"{remote.tip()}\trefs/heads/main"
    (call,) = remote.host.calls()
    assert call.verdict == OK
    assert _git_words(call.argv, ours[1:]) == [
        "-p", "2222", "git@sandbox.test", "git-upload-pack '/sandbox/apps.git'",
    ]  # fmt: skip


def test_a_push_reaches_receive_pack_on_the_bare_repository(
    remote: SshRemote, tmp_path: Path
) -> None:
    """gitprotocol-pack(5): pushing runs ``git-receive-pack '<path>'`` on the remote."""
    ours = _hand_written_command(remote, tmp_path / "keys")
    clone = tmp_path / "clone"
    git_out("clone", "-q", remote.url, str(clone), env=_ssh_env(ours))
    ident = ["-c", "user.name=t", "-c", "user.email=t@x"]
    git_out("-C", str(clone), *ident, "commit", "-q", "--allow-empty", "-m", "outside")
    git_out("-C", str(clone), "push", "-q", "origin", "HEAD:main", env=_ssh_env(ours))
    assert remote.tip() == git_out("-C", str(clone), "rev-parse", "HEAD")
    assert remote.host.calls()[-1].argv[-1] == "git-receive-pack '/sandbox/apps.git'"


def test_an_scp_like_address_gets_no_port_and_a_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's ``[user@]host:path`` form: port 22 (no ``-p``), the path as written."""
    host = FakeSshHost(tmp_path / "port22", port=22)
    host.allow(KEY)
    host.create_repo(REPO, {"a": b"a\n"}, CREATED_AT)
    monkeypatch.setenv("PATH", host.path_with_shim())
    env = env_for_secret({"identity": KEY, "known_hosts": host.known_hosts}, tmp_path / "k")
    assert ls_remote(f"git@sandbox.test:{REPO}.git", "main", env) is not None
    assert host.calls()[-1].argv[-2:] == ["git@sandbox.test", "git-upload-pack 'sandbox/apps.git'"]


def test_a_key_file_others_may_read_is_ignored_as_ssh_ignores_it(
    remote: SshRemote, tmp_path: Path
) -> None:
    """ssh(1) refuses identity files with group or other permissions ("UNPROTECTED")."""
    ours = _hand_written_command(remote, tmp_path / "keys", mode=0o644)
    with pytest.raises(GitError):
        ls_remote(remote.url, "main", {"GIT_SSH_COMMAND": shlex.join(ours)})
    assert remote.host.calls()[-1].verdict == KEY_REFUSED


@pytest.mark.parametrize(
    ("secret", "verdict"),
    [
        ({}, HOST_KEY_UNKNOWN),  # plain ssh, as the dispatcher ran it before D3 was fixed
        ({"identity": KEY}, HOST_KEY_UNKNOWN),  # strict checking is ssh's default without a tty
        ({"identity": OTHER_KEY, "known_hosts": None}, KEY_REFUSED),
        (
            {"identity": KEY, "known_hosts": b"[elsewhere]:2222 ssh-ed25519 AAAA\n"},
            HOST_KEY_UNKNOWN,
        ),
    ],
    ids=["nothing", "no-known-hosts", "wrong-key", "other-host"],
)
def test_the_fake_refuses_what_ssh_would_refuse(
    remote: SshRemote, tmp_path: Path, secret: dict[str, bytes | None], verdict: str
) -> None:
    full = {k: v if v is not None else remote.host.known_hosts for k, v in secret.items()}
    env = env_for_secret(full, tmp_path / "keys")
    with pytest.raises(GitError):
        ls_remote(remote.url, "main", env)
    assert remote.host.calls()[-1].verdict == verdict


def test_the_secrets_identity_reads_the_tip(remote: SshRemote, tmp_path: Path) -> None:
    env = env_for_secret(remote.secret, tmp_path / "keys")
    assert ls_remote(remote.url, "main", env) == remote.tip()
    argv = remote.host.calls()[-1].argv
    assert argv[argv.index("-i") + 1] == str(tmp_path / "keys" / "identity")
    assert ls_remote(remote.url, "no-such-branch", env) is None


def test_a_working_copy_fetches_and_pushes_with_the_secrets_identity(
    remote: SshRemote, tmp_path: Path
) -> None:
    env = env_for_secret(remote.secret, tmp_path / "keys")
    ws = Workspace(tmp_path / "ws", remote.url, "main", env=env)
    tip = ws.fetch()
    assert tip == remote.tip()
    ws.reset(tip)
    ws.write("apps/b.yaml", b"b: 2\n")
    ws.commit("over ssh", Committer("t", "t@x"))
    assert ws.push(tip).pushed
    assert remote.tip() == ws.head()
    assert {call.verdict for call in remote.host.calls()} == {OK}
    assert "identity" not in (tmp_path / "ws" / ".git" / "config").read_text()


def test_the_watchers_probe_reaches_an_ssh_provider_only_with_its_key(remote: SshRemote) -> None:
    provider = parse_git_provider(
        {
            "metadata": {"name": "gp", "namespace": "team", "uid": "u1", "generation": 1},
            "spec": {"url": remote.url, "allowedBranches": ["main"], "secretRef": {"name": "s"}},
        }
    )
    prober = Prober(clock=lambda: CREATED_AT)
    assert prober.probe(provider, remote.secret) is None
    wrong = {**remote.secret, "identity": OTHER_KEY}
    problem = prober.probe(provider, wrong)
    assert problem is not None and problem.reason == CONNECTION_FAILED
    assert [call.verdict for call in remote.host.calls()] == [OK, KEY_REFUSED]
