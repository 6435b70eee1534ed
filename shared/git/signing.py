"""SSH commit signing: a GitTarget's key, checked, generated, and handed to git for one commit.

git signs a commit with ``gpg.format=ssh`` by running ``ssh-keygen -Y sign -n git -f <key>``
on the commit's bytes (OpenSSH's ``sshsig`` format), so the product signs exactly as a person
with ``git -c gpg.format=ssh -c user.signingkey=<key> commit -S`` does, and ``git
verify-commit`` with an allowed-signers file checks it. ssh-keygen is also what checks a key
(``-y`` derives the public half, and fails on anything that is not a private key), takes a
passphrase off it, and generates one, so no cryptography library is needed.

Key material (T3): the private key is on disk only for the call in hand, in a file created
0600 in a folder created 0700 before a byte is written, removed when the call ends. It is
never put in Redis, a log line, a status or an exception message: errors name the Secret's
keys, never their content.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from shared.git.auth import _private_folder, _write_private
from shared.git.errors import GitPermanent

#: The Secret's keys (the Go operator's names, so its Secrets carry over).
PRIVATE_KEY = "signing.key"
PASSPHRASE = "passphrase"
PUBLIC_KEY = "signing.pub"
#: ssh-keygen answers in milliseconds; a hung one (no entropy, say) must not hold a branch.
SSH_KEYGEN_TIMEOUT_S = 20.0
#: The largest private key accepted: an RSA 16384-bit key in OpenSSH form is ~12 KiB.
MAX_KEY_BYTES = 32 * 1024
#: Where the askpass program finds the passphrase: ssh-keygen's environment, which it hands
#: on, and which only this user (and root) can read, unlike a command line.
PASSPHRASE_ENV = "GITOPS_REVERSER_SIGNING_PASSPHRASE"
_ASKPASS = b"#!/bin/sh\nprintf '%s\\n' \"$GITOPS_REVERSER_SIGNING_PASSPHRASE\"\n"


class SigningKeyInvalid(GitPermanent):
    """The Secret holds no usable signing key; the message says why, never what it holds."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A usable key: the private half (OpenSSH form, no passphrase) and the public half in
    authorized_keys form (what ``status.signingPublicKey`` shows and a Git host registers)."""

    private: bytes = field(repr=False)
    public: str

    def allowed_signer(self, principal: str) -> str:
        """A line of git's ``gpg.ssh.allowedSignersFile`` trusting this key for ``principal``."""
        return f'{principal} namespaces="git" {self.public}\n'


@contextmanager
def _private_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gitops-reverser-sign-") as name:
        folder = Path(name)
        _private_folder(folder)
        yield folder


def _keygen(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["ssh-keygen", *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=SSH_KEYGEN_TIMEOUT_S,
            check=False,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SigningKeyInvalid(f"ssh-keygen could not run: {type(err).__name__}") from None


def _public_half(text: str) -> str:
    """``type base64`` of an authorized_keys line (the comment is not part of the key)."""
    return " ".join(text.split()[:2])


def load_key(secret: Mapping[str, bytes]) -> SigningKey:
    """The signing key a Secret holds (``signing.key``, optional ``passphrase`` and
    ``signing.pub``); SigningKeyInvalid when there is none, it is not a private key, the
    passphrase does not open it, or ``signing.pub`` is another key's."""
    private = secret.get(PRIVATE_KEY, b"")
    if not private.strip():
        raise SigningKeyInvalid(f"the Secret has no {PRIVATE_KEY!r} key")
    if len(private) > MAX_KEY_BYTES:
        raise SigningKeyInvalid(f"{PRIVATE_KEY!r} is larger than {MAX_KEY_BYTES} bytes")
    passphrase = secret.get(PASSPHRASE, b"").decode(errors="replace")
    with _private_dir() as folder:
        path = _write_private(
            folder / "key", private if private.endswith(b"\n") else private + b"\n"
        )
        # rewritten without a passphrase in OpenSSH form, which carries its public half:
        # ``ssh-keygen -Y sign`` cannot sign with a PEM file alone
        done = _open_key(folder, path, passphrase)
        if done.returncode != 0:
            if passphrase and "incorrect passphrase" in done.stderr:
                raise SigningKeyInvalid(
                    f"{PRIVATE_KEY!r} cannot be opened with the Secret's {PASSPHRASE!r}"
                )
            hint = "" if passphrase else f" (or it needs a {PASSPHRASE!r})"
            raise SigningKeyInvalid(f"{PRIVATE_KEY!r} is not an OpenSSH or PEM private key{hint}")
        derived = _keygen("-y", "-P", "", "-f", str(path))
        if derived.returncode != 0 or not derived.stdout.strip():
            raise SigningKeyInvalid(f"{PRIVATE_KEY!r} is not an OpenSSH or PEM private key")
        opened = path.read_bytes()
    public = _public_half(derived.stdout)
    given = secret.get(PUBLIC_KEY, b"").decode(errors="replace").strip()
    if given and _public_half(given) != public:
        raise SigningKeyInvalid(f"{PUBLIC_KEY!r} is not the public half of {PRIVATE_KEY!r}")
    return SigningKey(opened, public)


def _open_key(folder: Path, path: Path, passphrase: str) -> subprocess.CompletedProcess[str]:
    """``ssh-keygen -p`` taking the passphrase off ``path``. The passphrase never goes on a
    command line (which every user of the machine can read in /proc): ssh-keygen asks for
    it, of an askpass program (``SSH_ASKPASS_REQUIRE=force``, OpenSSH 8.4 and later) written
    0700 in the private folder, which prints it from ssh-keygen's environment
    (``PASSPHRASE_ENV``; /proc/<pid>/environ is readable by this user and root only)."""
    if not passphrase:
        return _keygen("-p", "-q", "-P", "", "-N", "", "-f", str(path))
    if "\n" in passphrase or "\r" in passphrase:
        # ssh-keygen keeps an askpass answer up to its first line break
        raise SigningKeyInvalid(f"the Secret's {PASSPHRASE!r} has a line break")
    askpass = _write_private(folder / "askpass", _ASKPASS)
    askpass.chmod(0o700)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SSH_ASKPASS": str(askpass),
        "SSH_ASKPASS_REQUIRE": "force",
        PASSPHRASE_ENV: passphrase,
    }
    return _keygen("-p", "-q", "-N", "", "-f", str(path), env=env)


def generate_key(comment: str) -> SigningKey:
    """A new ed25519 key without a passphrase (``generateWhenMissing``)."""
    with _private_dir() as folder:
        path = folder / "key"
        done = _keygen("-t", "ed25519", "-q", "-N", "", "-C", comment, "-f", str(path))
        if done.returncode != 0:
            raise SigningKeyInvalid("ssh-keygen could not generate an ed25519 key")
        private = path.read_bytes()
        public = _public_half((folder / "key.pub").read_text())
    return SigningKey(private, public)


def secret_data(key: SigningKey) -> dict[str, bytes]:
    """What a generated key is stored as in its Secret."""
    return {PRIVATE_KEY: key.private, PUBLIC_KEY: key.public.encode() + b"\n"}


@contextmanager
def key_file(key: SigningKey) -> Iterator[Path]:
    """The private key in a private file for the block's duration, then removed."""
    with _private_dir() as folder:
        yield _write_private(folder / "signing-key", key.private)


def signing_options(path: Path) -> list[str]:
    """git's ``-c`` settings that sign a commit with the key at ``path`` (gpg.format=ssh)."""
    return ["gpg.format=ssh", f"user.signingkey={path}", "commit.gpgsign=true"]
