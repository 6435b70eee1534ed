"""The hook's WSGI fast path answers exactly as the Flask route does (R1, R3).

Each row of the table is a run of requests, good and bad, played against two fresh apps: one
through the app as gunicorn calls it (``POST /hook/<hex digest>`` taken by ``HookFastPath``),
one through Flask itself (``HookFastPath.flask``, the route the fast path stands in for). The
status lines, header lists and bodies must be the same bytes, and so must what was stored and
counted. Flask's ``request_started`` signal shows which path answered: the fast path must have
taken every delivery it is meant to, and nothing else.

Facts: webhooks-git-libs.md §1.1-1.6 (deliveries), §3.7 (chunked bodies).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from flask import request_started
from werkzeug.test import Client, TestResponse

from services.receiver.deadline import SlowClient
from services.receiver.hook import HookFastPath
from services.receiver.secrets import SecretUnavailable
from tests.unit.receiver import samples
from tests.unit.receiver.rig import LIMIT, Rig, make_rig
from tests.unit.receiver.samples import Delivery, every_kind

#: A digest-shaped path no receiver is published at.
UNKNOWN = "/hook/" + "ab" * 32


def _post(path: str, d: Delivery, **extra: Any) -> dict[str, Any]:
    return {"path": path, "method": "POST", "data": d.body, "headers": d.headers, **extra}


def _chunked(d: Delivery, stream: Any = None) -> dict[str, Any]:
    overrides: dict[str, Any] = {"wsgi.input_terminated": True}
    if stream is not None:
        overrides["wsgi.input"] = stream
    return {
        "method": "POST",
        "input_stream": None if stream is not None else io.BytesIO(d.body),
        "headers": {**d.headers, "Transfer-Encoding": "chunked"},
        "environ_overrides": overrides,
    }


class _Trickle(io.RawIOBase):
    """A body the worker's read deadline runs out on (C5)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise SlowClient("the request took over 10 s to arrive")


def _gunicorn_chunks(raw: bytes) -> Any:
    from gunicorn.http.body import Body, ChunkedReader
    from gunicorn.http.unreader import IterUnreader

    return Body(ChunkedReader(None, IterUnreader([raw])))


PUSH = samples.github(samples.github_push(), delivery="d-1")
BIG = samples.github({"ref": "refs/heads/main", "pad": "x" * LIMIT})
NOT_JSON = Delivery({"X-Signature": "sha256=" + samples.mac(b"{no")}, b"{no", "", b"")


@dataclass(frozen=True)
class Row:
    """A run of requests to a receiver of ``kind``; ``fast``: the fast path should answer."""

    kind: str
    requests: Callable[[str], list[dict[str, Any]]]
    fast: bool = True
    setup: Callable[[Rig], None] = lambda rig: None


def _down(rig: Rig) -> None:
    rig.server.connected = False


def _secret_fails(error: Exception) -> Callable[[Rig], None]:
    def setup(rig: Rig) -> None:
        rig.secrets.failure = error

    return setup


ROWS: dict[str, Row] = {
    **{
        f"stored {name}": Row(samples.kind_of(name), lambda p, d=d: [_post(p, d)])
        for name, d in every_kind().items()
    },
    "duplicate": Row("github", lambda p: [_post(p, PUSH), _post(p, PUSH)]),
    "bad signature": Row(
        "github",
        lambda p: [_post(p, PUSH.with_header("X-Hub-Signature-256", "sha256=" + "0" * 64))],
    ),
    "no signature": Row(
        "github", lambda p: [_post(p, PUSH.with_header("X-Hub-Signature-256", None))]
    ),
    "ping": Row("github", lambda p: [_post(p, samples.github_ping())]),
    "ignored": Row("github", lambda p: [_post(p, samples.github({"a": 1}, event="issues"))]),
    "dropped": Row(
        "github", lambda p: [_post(p, samples.github(samples.github_push("refs/tags/v1")))]
    ),
    "not JSON": Row("generic-hmac", lambda p: [_post(p, NOT_JSON)]),
    "too large": Row("github", lambda p: [_post(p, BIG)]),
    "chunked, too large": Row("github", lambda p: [{"path": p, **_chunked(BIG)}]),
    "chunked, whole": Row("github", lambda p: [{"path": p, **_chunked(PUSH)}]),
    "chunked, broken": Row(
        "github",
        lambda p: [
            {
                "path": p,
                **_chunked(PUSH, _gunicorn_chunks(b"zz\r\n" + PUSH.body + b"\r\n0\r\n\r\n")),
            }
        ],
    ),
    "too slow": Row(
        "github",
        lambda p: [
            _post(p, PUSH, environ_overrides={"wsgi.input": _Trickle(), "CONTENT_LENGTH": "900"})
        ],
    ),
    "client gone mid-body": Row(
        "github",
        lambda p: [
            _post(
                p,
                PUSH,
                environ_overrides={
                    "wsgi.input": io.BytesIO(PUSH.body[:10]),
                    "CONTENT_LENGTH": str(len(PUSH.body)),
                },
            )
        ],
    ),
    "unknown receiver": Row("github", lambda p: [_post(UNKNOWN, PUSH)]),
    "not a digest": Row("github", lambda p: [_post("/hook/nothex", PUSH)], fast=False),
    "upper-case digest": Row(
        "github", lambda p: [_post(p.upper().replace("/HOOK/", "/hook/"), PUSH)], fast=False
    ),
    "trailing slash": Row("github", lambda p: [_post(p + "/", PUSH)], fast=False),
    "wrong method": Row("github", lambda p: [{"path": p, "method": "PUT"}], fast=False),
    "healthz": Row("github", lambda p: [{"path": "/healthz", "method": "POST"}], fast=False),
    "redis down": Row("github", lambda p: [_post(p, PUSH)], setup=_down),
    "secret unreadable": Row(
        "github", lambda p: [_post(p, PUSH)], setup=_secret_fails(SecretUnavailable("refused"))
    ),
    "a bug": Row("github", lambda p: [_post(p, PUSH)], setup=_secret_fails(RuntimeError("bug"))),
    "an unreadable request": Row(
        "github", lambda p: [_post(p, PUSH)], setup=_secret_fails(ValueError("bad"))
    ),
}


def _wire(response: TestResponse) -> tuple[str, list[tuple[str, str]], bytes]:
    return response.status, response.headers.to_wsgi_list(), response.get_data()


def _play(row: Row, via_flask: bool) -> tuple[list[Any], list[Any], float, int]:
    """The answers on the wire, the notices stored, the deliveries counted, Flask dispatches."""
    rig = make_rig()
    path = rig.add(row.kind)
    row.setup(rig)
    dispatched: list[object] = []

    def seen(sender: object, **_: object) -> None:
        dispatched.append(sender)

    fast = rig.app.wsgi_app
    assert isinstance(fast, HookFastPath)
    client = Client(fast.flask) if via_flask else rig.client
    with request_started.connected_to(seen, rig.app):
        answers = [_wire(client.open(**r)) for r in row.requests(path)]
    rig.server.connected = True
    counted = sum(
        s.value
        for metric in rig.registry.collect()
        if metric.name == "gitops_reverser_receiver_deliveries"
        for s in metric.samples
        if s.name.endswith("_total")
    )
    notices = [(n.provider, n.ref, n.after, n.received_at) for n in rig.notices()]
    return answers, notices, counted, len(dispatched)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_fast_path_answers_as_the_flask_route(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """R1/R3: the same status line, headers and JSON body, the same notices and counts."""
    row = ROWS[name]
    with caplog.at_level(logging.DEBUG):
        fast, fast_notices, fast_counted, fast_dispatched = _play(row, via_flask=False)
        fast_log = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
        caplog.clear()
        flask, flask_notices, flask_counted, flask_dispatched = _play(row, via_flask=True)
        flask_log = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert fast == flask
    assert (fast_notices, fast_counted) == (flask_notices, flask_counted)
    assert fast_log == flask_log
    assert flask_dispatched == len(fast)
    assert fast_dispatched == (0 if row.fast else len(fast))
    for status, headers, body in fast:
        assert dict(headers)["Content-Type"] == "application/json"
        assert body.startswith(b'{"reason":') and not status.startswith("500")
