"""Credentials are never part of a GitProvider's URL (T3; the reliability probe of 2026-12).

The CRD refuses them with a CEL rule; this is the same rule for objects stored before it
existed (or written past it): such a GitProvider is stalled with ``CredentialsInURL`` and its
GitTargets are not served, so the URL never reaches git, ``.git/config``, Redis, a log line, a
status message or an Event. An SSH user name (``ssh://git@host/...``, ``git@host:path``) is
not a credential; a password after it is, and so is any user-info in an http(s) URL (a token
is often passed as the user name).
"""

from __future__ import annotations

import re

CREDENTIALS_IN_URL = "CredentialsInURL"

_HTTP_USERINFO = re.compile(r"^https?://[^/?#]*@", re.IGNORECASE)
_SSH_PASSWORD = re.compile(r"^ssh://[^/?#@]*:[^/?#@]*@", re.IGNORECASE)
_SCP_PASSWORD = re.compile(r"^[^/@]*:[^/@]*@")

#: Safe to show: it never repeats the URL.
MESSAGE = (
    "spec.url must not carry credentials (user:password@ or a token before the host); "
    "put them in the Secret named by spec.secretRef"
)


def has_credentials(url: str) -> bool:
    """True when ``url`` carries a password or token before its host."""
    return bool(_HTTP_USERINFO.match(url) or _SSH_PASSWORD.match(url) or _SCP_PASSWORD.match(url))
