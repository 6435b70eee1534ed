"""Kubernetes API failures, classified once at the adapter boundary.

Callers never see the client library's exceptions: ``KubePermanent`` will not heal by
retrying the same request (403, 404, 422 and other client errors), ``KubeTemporary`` may
(5xx, 429, a conflict, a connection that failed or timed out), and ``Expired`` is the watch
protocol's 410 Gone, which means "list again", not "try again".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

#: HTTP codes retrying can fix: conflicts, throttling, and the server's own failures.
_TEMPORARY_CODES = frozenset({408, 409, 429})


class KubeError(Exception):
    """Base of every error the Kubernetes adapter raises."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class KubePermanent(KubeError):
    """Retrying the same request will not help: report it."""


class NotFound(KubePermanent):
    """The object (or its type) does not exist (404)."""


class KubeTemporary(KubeError):
    """Retrying later may help: back off and try again."""


class Conflict(KubeTemporary):
    """The object changed since it was read (409): read again and decide again."""


class Expired(KubeError):
    """410 Gone: the resourceVersion is older than the server's history; list again."""


def _message(err: ApiException) -> str:
    try:
        body = json.loads(err.body or "{}")
    except (TypeError, ValueError):
        body = {}
    text = body.get("message") if isinstance(body, dict) else None
    return str(text or err.reason or "no message")


def classify(err: ApiException) -> KubeError:
    """The adapter's error for an ApiException (status 0 means no HTTP answer at all)."""
    code = int(err.status or 0)
    text = f"{code} {_message(err)}"
    if code == 410:
        return Expired(text, code)
    if code == 404:
        return NotFound(text, code)
    if code == 409:
        return Conflict(text, code)
    if code == 0 or code >= 500 or code in _TEMPORARY_CODES:
        return KubeTemporary(text, code)
    return KubePermanent(text, code)


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Run a client call, re-raising its failures as KubeError (``what`` names the call)."""
    try:
        yield
    except ApiException as err:
        error = classify(err)
        raise type(error)(f"{what}: {error}", error.code) from err
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise KubeTemporary(f"{what}: {err}") from err
    except ConfigException as err:
        raise KubePermanent(f"{what}: {err}") from err
