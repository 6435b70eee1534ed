"""The fake ssh reads a command line as OpenSSH does (ssh(1) SYNOPSIS and ssh_config(5)).

``-p2222`` and ``-p 2222`` are one option, ``-oName=value`` and ``-o "Name value"`` too, option
names are case-insensitive, the first value obtained wins, and the words after the destination
are joined by spaces into the remote command. The end-to-end behaviour (real git, a real bare
repository) is pinned in ``tests/integration/git/test_ssh.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.githost.fake_ssh import Config, Refused, check, digest, host_key_for, parse

KEY = b"identity bytes\n"


def test_options_are_read_in_their_joined_and_separate_forms() -> None:
    call = parse(
        ["-p2222", "-p", "22", "-oUser=a", "-o", "user b", "-i", "/k", "-4", "h", "echo", "x"]
    )
    assert call.port == "2222"
    assert call.options == {"user": "a"}
    assert call.identities == ["/k"]
    assert call.flags == {"4"}
    assert (call.destination, call.command) == ("h", "echo x")


def test_an_unknown_option_is_refused_like_ssh() -> None:
    with pytest.raises(Refused, match="unknown option -- Z"):
        parse(["-Z", "h"])


def _config(tmp_path: Path) -> Config:
    (tmp_path / "team" / "apps.git").mkdir(parents=True)
    (tmp_path / "team" / "apps.git" / "HEAD").write_text("ref: refs/heads/main\n")
    return Config(str(tmp_path), "h.test", 22, "git", host_key_for("h.test"), [digest(KEY)])


def _args(tmp_path: Path, command: str) -> list[str]:
    (tmp_path / "id").write_bytes(KEY)
    (tmp_path / "id").chmod(0o600)
    (tmp_path / "kh").write_text(f"other,h.test {host_key_for('h.test')}\n")
    known = f"UserKnownHostsFile={tmp_path / 'kh'}"
    return ["-i", str(tmp_path / "id"), "-o", known, "git@h.test", command]


def test_a_known_host_and_key_may_run_upload_pack_inside_the_root(tmp_path: Path) -> None:
    config = _config(tmp_path)
    program, repo = check(parse(_args(tmp_path, "git-upload-pack '/team/apps.git'")), config)
    assert (program, repo) == ("upload-pack", (tmp_path / "team" / "apps.git").resolve())


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("sh -c id", "unrecognised command"),
        ("git-upload-pack '/../outside.git'", "does not appear to be a git repository"),
        ("git-receive-pack '/team/none.git'", "does not appear to be a git repository"),
    ],
)
def test_only_pack_programs_on_repositories_under_the_root_run(
    tmp_path: Path, command: str, why: str
) -> None:
    with pytest.raises(Refused, match=why):
        check(parse(_args(tmp_path, command)), _config(tmp_path))


def test_a_host_key_other_than_the_hosts_is_a_changed_identification(tmp_path: Path) -> None:
    args = _args(tmp_path, "git-upload-pack '/team/apps.git'")
    (tmp_path / "kh").write_text(f"h.test {host_key_for('elsewhere')}\n")
    with pytest.raises(Refused, match="REMOTE HOST IDENTIFICATION HAS CHANGED"):
        check(parse(args), _config(tmp_path))
