"""Outbound HTTP: the only place the product calls a URL that is not a Kubernetes API or a
Git remote (today: the webhook applier's POST, D7).

One call, no retry (the applier's backoff retries, A4) and no redirect (a redirect could carry
a signed body to another host; it is an answer like any other non-2xx). A timeout or a
connection failure is ``HttpError`` with a message a person can act on.
"""

from __future__ import annotations

from dataclasses import dataclass

import urllib3
from urllib3.exceptions import HTTPError as _Urllib3Error

__all__ = ["Answer", "HttpError", "post"]

_POOL = urllib3.PoolManager()


@dataclass(frozen=True, slots=True)
class Answer:
    """The status line of an answer."""

    status: int
    reason: str


class HttpError(Exception):
    """The request got no answer: a timeout, a refused connection, a bad URL."""


def post(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> Answer:
    """POST ``body`` once, waiting at most ``timeout_s`` in all; the answer's status line."""
    try:
        response = _POOL.request(
            "POST",
            url,
            body=body,
            headers=headers,
            timeout=urllib3.Timeout(total=timeout_s),
            retries=False,
            redirect=False,
        )
    except _Urllib3Error as err:
        raise HttpError(_describe(err, timeout_s)) from err
    except ValueError as err:  # a URL urllib3 cannot use
        raise HttpError(f"cannot POST to this URL: {err}") from err
    return Answer(response.status, response.reason or "")


def _describe(err: _Urllib3Error, timeout_s: float) -> str:
    if isinstance(err, urllib3.exceptions.TimeoutError):
        return f"timeout: no answer within {timeout_s:g}s"
    return f"no answer: {type(err).__name__}: {str(err)[:200]}"
