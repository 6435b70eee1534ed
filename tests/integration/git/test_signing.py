"""Signed commits (P6): real git, real ssh-keygen, checked by ``git verify-commit``.

A commit made with a GitTarget's key verifies against an allowed-signers file
(``gpg.ssh.allowedSignersFile``) that trusts that key, and fails against one that trusts
another key, so the check is the signature's, not git's leniency. Keys are read as the
Secret holds them (``signing.key``, ``passphrase``, ``signing.pub``), and what cannot be used
is refused with a reason that names the Secret's keys, never their content.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from sandbox.githost.outside import git
from shared.git.signing import (
    PASSPHRASE,
    PRIVATE_KEY,
    PUBLIC_KEY,
    SigningKey,
    SigningKeyInvalid,
    generate_key,
    key_file,
    load_key,
    secret_data,
)
from shared.git.workspace import Workspace
from tests.configs import DEFAULT_COMMITTER

pytestmark = pytest.mark.integration


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(path))
    return path


def verify(
    repo: Path, rev: str, key: SigningKey, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """``git verify-commit`` of ``rev`` with an allowed-signers file trusting only ``key``."""
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(key.allowed_signer(DEFAULT_COMMITTER.email))
    return subprocess.run(
        ["git", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", "--raw", rev],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )


def _signed_commit(tmp_path: Path, bare: Path, key: SigningKey) -> str:
    ws = Workspace(tmp_path / "ws", str(bare), "main")
    ws.reset(ws.fetch())
    ws.write("apps/cm.yaml", b"a: 1\n")
    with key_file(key) as path:
        sha = ws.commit("signed", DEFAULT_COMMITTER, signing_key=path)
    assert sha is not None
    assert ws.push(expected=None).pushed
    return sha


def test_a_signed_commit_verifies_with_its_key(tmp_path: Path, bare: Path) -> None:
    """P6: the pushed commit carries an SSH signature that git verifies against the key."""
    key = generate_key("test")
    sha = _signed_commit(tmp_path, bare, key)
    header = git("cat-file", "commit", sha, cwd=bare)
    assert "-----BEGIN SSH SIGNATURE-----" in header
    checked = verify(bare, sha, key, tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "Good" in checked.stderr


def test_the_signature_does_not_verify_with_another_key(tmp_path: Path, bare: Path) -> None:
    """P6: verification is the signature's: a file trusting another key refuses the commit."""
    sha = _signed_commit(tmp_path, bare, generate_key("signer"))
    checked = verify(bare, sha, generate_key("someone else"), tmp_path)
    assert checked.returncode != 0


def test_an_unsigned_commit_carries_no_signature(tmp_path: Path, bare: Path) -> None:
    """Without a key (no spec.commit.signing) commits are made as before, unsigned."""
    ws = Workspace(tmp_path / "ws", str(bare), "main")
    ws.reset(None)
    ws.write("a.yaml", b"x\n")
    sha = ws.commit("plain", DEFAULT_COMMITTER)
    assert sha is not None
    assert "gpgsig" not in git("cat-file", "commit", sha, cwd=tmp_path / "ws")


def test_the_key_file_is_private_and_removed_after_use(tmp_path: Path) -> None:
    """T3: the key is on disk only for the call, readable by us alone."""
    with key_file(generate_key("t")) as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.read_bytes().startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    assert not path.exists()
    assert not path.parent.exists()


def _keygen(tmp_path: Path, *args: str) -> tuple[bytes, str]:
    path = tmp_path / "user-key"
    subprocess.run(["ssh-keygen", "-q", "-f", str(path), *args], check=True)
    return path.read_bytes(), (tmp_path / "user-key.pub").read_text()


def test_a_users_key_with_its_public_half_loads(tmp_path: Path) -> None:
    """A key made by ssh-keygen, with the signing.pub that came with it."""
    private, public = _keygen(tmp_path, "-t", "ed25519", "-N", "", "-C", "me@example.com")
    key = load_key({PRIVATE_KEY: private, PUBLIC_KEY: public.encode()})
    assert key.public == " ".join(public.split()[:2])


def test_a_passphrase_protected_key_signs_with_its_passphrase(tmp_path: Path, bare: Path) -> None:
    """The Secret's passphrase opens the key; the commit verifies."""
    private, _ = _keygen(tmp_path, "-t", "ed25519", "-N", "s3cret pass")
    key = load_key({PRIVATE_KEY: private, PASSPHRASE: b"s3cret pass"})
    sha = _signed_commit(tmp_path, bare, key)
    assert verify(bare, sha, key, tmp_path).returncode == 0


def test_the_passphrase_is_never_on_a_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T3: ssh-keygen gets the passphrase from an askpass program reading its environment,
    never from its argv (readable by every user of the machine); the askpass program goes
    with the private folder."""
    private, _ = _keygen(tmp_path, "-t", "ed25519", "-N", "s3cret pass")
    calls: list[tuple[list[str], dict[str, str] | None]] = []
    real_run = subprocess.run

    def recording(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        env = kw.get("env")
        calls.append((list(args), dict(env) if isinstance(env, dict) else None))
        return real_run(args, **kw)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(subprocess, "run", recording)
    key = load_key({PRIVATE_KEY: private, PASSPHRASE: b"s3cret pass"})
    assert key.public.startswith("ssh-ed25519 ")
    assert calls and not any("s3cret" in arg for args, _ in calls for arg in args)
    opened = [env for args, env in calls if "-p" in args]
    assert opened and opened[0] is not None
    assert opened[0]["SSH_ASKPASS_REQUIRE"] == "force"
    assert not Path(opened[0]["SSH_ASKPASS"]).exists()


def test_a_passphrase_with_a_line_break_is_refused(tmp_path: Path) -> None:
    """An askpass answer ends at its first line break, so such a passphrase is refused in
    words (and never half-used)."""
    private, _ = _keygen(tmp_path, "-t", "ed25519", "-N", "right")
    with pytest.raises(SigningKeyInvalid, match="line break"):
        load_key({PRIVATE_KEY: private, PASSPHRASE: b"ri\nght"})


def test_an_rsa_key_in_pem_form_signs(tmp_path: Path, bare: Path) -> None:
    """PEM (``-m PEM``) keys, as older tooling writes them, load and sign too."""
    private, _ = _keygen(tmp_path, "-t", "rsa", "-b", "2048", "-N", "", "-m", "PEM")
    assert private.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    key = load_key({PRIVATE_KEY: private})
    sha = _signed_commit(tmp_path, bare, key)
    assert verify(bare, sha, key, tmp_path).returncode == 0


@pytest.mark.parametrize(
    ("secret", "words"),
    [
        ({}, "has no 'signing.key'"),
        ({PRIVATE_KEY: b"   \n"}, "has no 'signing.key'"),
        ({PRIVATE_KEY: b"not a key at all"}, "is not an OpenSSH or PEM private key"),
        ({PRIVATE_KEY: b"x" * (64 * 1024)}, "larger than"),
    ],
)
def test_what_is_not_a_key_is_refused(secret: dict[str, bytes], words: str) -> None:
    """SigningKeyInvalid says what is wrong in words, without the Secret's content."""
    with pytest.raises(SigningKeyInvalid) as raised:
        load_key(secret)
    assert words in str(raised.value)
    assert "not a key at all" not in str(raised.value)


def test_a_wrong_passphrase_is_refused(tmp_path: Path) -> None:
    private, _ = _keygen(tmp_path, "-t", "ed25519", "-N", "right")
    with pytest.raises(SigningKeyInvalid, match="cannot be opened"):
        load_key({PRIVATE_KEY: private, PASSPHRASE: b"wrong"})
    with pytest.raises(SigningKeyInvalid, match="needs a 'passphrase'"):
        load_key({PRIVATE_KEY: private})


def test_a_public_key_of_another_key_is_refused() -> None:
    mine, other = generate_key("mine"), generate_key("other")
    with pytest.raises(SigningKeyInvalid, match="not the public half"):
        load_key({PRIVATE_KEY: mine.private, PUBLIC_KEY: other.public.encode()})


def test_a_generated_key_round_trips_through_its_secret() -> None:
    """generateWhenMissing stores signing.key and signing.pub; reading them back agrees."""
    key = generate_key("gitops-reverser team/apps")
    stored = secret_data(key)
    assert set(stored) == {PRIVATE_KEY, PUBLIC_KEY}
    assert key.public.startswith("ssh-ed25519 ")
    assert load_key(stored).public == key.public
    assert str(os.getpid()) not in key.public
    assert "PRIVATE" not in repr(key)  # the private half stays out of reprs and logs
