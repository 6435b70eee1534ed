"""People on the sandbox's API double: bearer tokens for named users, for trying attribution.

``python -m sandbox up --user NAME=TOKEN`` and ``make up`` (``--user``, ``--attribution``)
turn the API double's authentication on: each user's token names them in the audit log
(``sandbox.kube.audit``), which is what attribution reads (docs/attribution.md). No RBAC is
modelled for them: each user, and the administrator the doubles and ``DIR/kubeconfig`` use,
may do everything.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from sandbox.kube.access import AccessRule
from sandbox.kube.server import KubeApiServer
from sandbox.stack import Identities

#: The user of ``DIR/kubeconfig`` (and of the doubles) when tokens are on.
ADMIN = "sandbox-admin"
#: The users ``make up ATTRIBUTION=1`` makes when none are named.
DEMO_USERS = ("alice", "bob")


def parse_users(pairs: list[str]) -> dict[str, str]:
    """``NAME=TOKEN`` pairs as {token: name}; ValueError on a malformed one."""
    found: dict[str, str] = {}
    for pair in pairs:
        name, sep, token = pair.partition("=")
        if not (sep and name and token):
            raise ValueError(f"--user wants NAME=TOKEN, got {pair!r}")
        found[token] = name
    return found


def demo_users() -> dict[str, str]:
    """``DEMO_USERS`` with fresh tokens."""
    return {secrets.token_hex(16): name for name in DEMO_USERS}


def identities(tokens: dict[str, str]) -> Identities | None:
    """The API double's identities for these users and an administrator; None without users
    (authentication stays off)."""
    if not tokens:
        return None
    admin = secrets.token_hex(16)
    everyone = {admin: ADMIN, **tokens}
    rules = tuple(AccessRule(u, ("*",), ("*",), ("*",)) for u in sorted(set(everyone.values())))
    return Identities(everyone, rules, product_token=admin, admin_token=admin)


def write_kubeconfigs(kube: KubeApiServer, directory: Path, tokens: dict[str, str]) -> list[Path]:
    """``DIR/kubeconfig-NAME`` for each user; the files written."""
    written = []
    for token, name in tokens.items():
        path = directory / f"kubeconfig-{name}"
        kube.write_kubeconfig(path, token=token)
        written.append(path)
    return written
