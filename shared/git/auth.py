"""Credentials for git, passed in the environment (HTTP) and never written to a URL or log.

git reads ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (git >= 2.31) as
command-line config, so an ``http.extraHeader`` with the Authorization header reaches the
remote without landing in ``.git/config``, a URL, or a log line.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Mapping
from pathlib import Path


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
    if "bearerToken" in secret:
        return bearer_env(secret["bearerToken"].decode().strip())
    if "password" in secret:
        user = secret.get("username", b"").decode().strip()
        return basic_auth_env(user, secret["password"].decode().strip())
    return {}


def ssh_env(secret: Mapping[str, bytes], folder: Path) -> dict[str, str]:
    """Git environment for an SSH identity, written into ``folder`` (empty without one)."""
    if "identity" not in secret:
        return {}
    identity = folder / "identity"
    identity.write_bytes(secret["identity"])
    identity.chmod(0o600)
    options = ["ssh", "-i", str(identity), "-o", "IdentitiesOnly=yes"]
    if "known_hosts" in secret:
        known = folder / "known_hosts"
        known.write_bytes(secret["known_hosts"])
        options += ["-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes"]
    return {"GIT_SSH_COMMAND": shlex.join(options)}
