"""HTTP credentials for git, passed in the environment and never written to disk.

git reads ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (git >= 2.31) as
command-line config, so an ``http.extraHeader`` with the Authorization header reaches the
remote without landing in ``.git/config``, a URL, or a log line.
"""

from __future__ import annotations

import base64


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
