"""Credentials for git, passed in the environment and never written to a URL, config or log.

One place turns a GitProvider's Secret (``docs/crds.md``: ``username`` + ``password``,
``password`` alone as a token, ``bearerToken``, or an SSH private key + ``known_hosts``) into
the environment every git call to a remote runs with, so the branch worker, the watcher's probe
and the dispatcher cannot disagree about what a Secret means. Three dialects name the SSH key:
Flux's ``identity``, Argo CD's ``sshPrivateKey`` and a ``kubernetes.io/ssh-auth`` Secret's
``ssh-privatekey``; the known hosts are ``known_hosts`` (Argo CD's ConfigMap calls them
``ssh_known_hosts``). An empty value counts as an absent key.

HTTP: git reads ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (git >= 2.31)
as command-line config, so an ``http.extraHeader`` with the Authorization header reaches the
remote without landing in ``.git/config``, a URL, or a log line.

SSH: the identity (and the known hosts) are written to files that only we may read, in a folder
only we may enter, and ``GIT_SSH_COMMAND`` points ssh at them; ssh itself refuses an identity
file others can read.

A private CA: a ``ca.crt`` key (Flux's name for it in a GitRepository's Secret) is written to
the same private folder and named by ``GIT_SSL_CAINFO`` (the variable, not ``http.sslCAInfo``:
git lets a ``GIT_SSL_CAINFO`` inherited from the process environment override the config), so
HTTPS to a Git host whose certificate a private CA signed is verified against that bundle (git
then consults no other: a bundle for a host with a public certificate must hold the public
roots too). A proxy needs nothing here: git (libcurl) reads ``HTTPS_PROXY``, ``HTTP_PROXY``
and ``NO_PROXY`` from the process environment, which every git call inherits.
"""

from __future__ import annotations

import base64
import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from shared.git.remote import SSH_OPTIONS

#: Mode of the folder holding SSH files, and of the files: ours alone.
PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


#: The keys an SSH private key may be under, first found wins: Flux's, Argo CD's, Kubernetes's.
SSH_KEY_KEYS = ("identity", "sshPrivateKey", "ssh-privatekey")
#: The keys SSH known hosts may be under (a Secret's, or a GitProvider's knownHostsRef's).
KNOWN_HOSTS_KEYS = ("known_hosts", "ssh_known_hosts")


def value_of(data: Mapping[str, bytes], *keys: str) -> bytes | None:
    """The first of ``keys`` with a value that is not empty (blank counts as empty)."""
    for key in keys:
        found = data.get(key)
        if found is not None and found.strip():
            return found
    return None


#: The Secret key holding a PEM bundle of the CA(s) that sign the Git host's certificate.
CA_KEY = "ca.crt"
#: git's variable for the CA bundle HTTPS is verified against (it wins over any config).
CA_VARIABLE = "GIT_SSL_CAINFO"


def basic_auth_env(username: str, password: str) -> dict[str, str]:
    """Environment that makes git send HTTP basic credentials."""
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return _header_env(f"Authorization: Basic {token}")


def bearer_env(token: str) -> dict[str, str]:
    """Environment that makes git send a bearer token."""
    return _header_env(f"Authorization: Bearer {token}")


def _header_env(header: str) -> dict[str, str]:
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": header,
    }


def http_auth_env(secret: Mapping[str, bytes]) -> dict[str, str]:
    """Git environment for HTTP credentials (empty when the Secret holds none)."""
    token = value_of(secret, "bearerToken")
    if token is not None:
        return bearer_env(token.decode().strip())
    password = value_of(secret, "password")
    if password is not None:
        user = secret.get("username", b"").decode().strip()
        return basic_auth_env(user, password.decode().strip())
    return {}


def ca_env(secret: Mapping[str, bytes], folder: Path) -> dict[str, str]:
    """Git environment that trusts the Secret's ``ca.crt`` for HTTPS (empty without one)."""
    if not secret.get(CA_KEY, b"").strip():
        return {}
    _private_folder(folder)
    return {CA_VARIABLE: str(_write_private(folder / CA_KEY, secret[CA_KEY]))}


def keeps_files(env: Mapping[str, str]) -> bool:
    """Whether ``env`` names files written for it (an SSH identity, a CA bundle)."""
    return "GIT_SSH_COMMAND" in env or CA_VARIABLE in env


def ssh_env(secret: Mapping[str, bytes], folder: Path) -> dict[str, str]:
    """Git environment for an SSH identity, written into ``folder`` (empty without one).

    ``folder`` is created (or narrowed) to 0700 and the files are created 0600 before a byte
    is written, so the key is never readable by others, not even for an instant.
    """
    key = value_of(secret, *SSH_KEY_KEYS)
    if key is None:
        return {}
    _private_folder(folder)
    identity = _write_private(folder / "identity", key)
    options = ["ssh", "-i", str(identity), "-o", "IdentitiesOnly=yes"]
    hosts = value_of(secret, *KNOWN_HOSTS_KEYS)
    if hosts is not None:
        known = _write_private(folder / "known_hosts", hosts)
        options += ["-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes"]
    return {"GIT_SSH_COMMAND": shlex.join([*options, *SSH_OPTIONS])}  # bounded waits (C3)


def env_for_secret(secret: Mapping[str, bytes] | None, ssh_folder: Path) -> dict[str, str]:
    """The git environment a GitProvider's Secret asks for (empty without credentials).

    The one function every caller that talks to a remote uses; SSH files and the CA bundle go
    to ``ssh_folder``.
    """
    if not secret:
        return {}
    return {**http_auth_env(secret), **ca_env(secret, ssh_folder), **ssh_env(secret, ssh_folder)}


def _private_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
    folder.chmod(PRIVATE_FOLDER)  # mkdir's mode is masked by the umask and skips existing ones


def _write_private(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as file:
        os.fchmod(file.fileno(), PRIVATE_FILE)  # an older file of that name may be wider
        file.write(data)
    return path
