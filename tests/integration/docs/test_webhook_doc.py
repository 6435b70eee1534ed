"""docs/crds.md "The webhook applier": the verification snippet a receiver copies accepts a
request the product really sent over HTTP, and refuses it tampered or replayed; the body the
page shows has the keys the product sends (D7)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sandbox.webhook_sink import Delivery, WebhookSink
from shared.appliers.webhook import WebhookPending
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from shared.model.webhook import WebhookEndpoint

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[3] / "docs" / "crds.md"
KEY = b"receiver-key"
Verify = Callable[..., bool]


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("### The webhook applier")
    return text[start : text.index("\n## ", start)]


def _block(language: str) -> str:
    [found] = re.findall(rf"```{language}\n(.*?)```", _section(), flags=re.DOTALL)
    return str(found)


@pytest.fixture(scope="module")
def verify() -> Verify:
    space: dict[str, object] = {}
    exec(compile(_block("python"), str(DOC), "exec"), space)
    found = space["verify"]
    assert callable(found)
    return found  # type: ignore[return-value]


@pytest.fixture
def sink() -> Iterator[WebhookSink]:
    running = WebhookSink(KEY).start()
    yield running
    running.stop()


def _sent(sink: WebhookSink, signed_at: float) -> Delivery:
    """One request as the product sends it, received over HTTP by the sink."""
    endpoint = WebhookEndpoint(f"{sink.url}/hook", "deploy-hook", 5.0)
    ref = ApplierRef("Webhook", "team", endpoint.name, "default")
    request = ApplyRequest(
        "tok-1", "bk", "https://git/r", "main", "c" * 40, {"Refusal": ["u1"]}, ref, 0.0, endpoint
    )
    pending = WebhookPending(endpoint, KEY, request, lambda: signed_at)
    pending.request(["Refusal"], "tok-1")
    [delivery] = sink.wait_for(1, 10)
    return delivery


def test_the_snippet_accepts_a_real_request(sink: WebhookSink, verify: Verify) -> None:
    got = _sent(sink, time.time())
    assert verify(KEY, got.headers, got.body)
    assert got.verified  # the sink, by the same published rule, agrees


def test_the_snippet_refuses_a_tampered_body_another_key_and_a_replay(
    sink: WebhookSink, verify: Verify
) -> None:
    got = _sent(sink, time.time() - 3600)  # signed an hour ago: a replay
    assert got.verified  # the signature itself is right...
    assert not verify(KEY, got.headers, got.body)  # ...but too old
    assert verify(KEY, got.headers, got.body, tolerance_s=7200)
    assert not verify(KEY, got.headers, got.body.replace(b"main", b"prod"), tolerance_s=7200)
    assert not verify(b"another key", got.headers, got.body, tolerance_s=7200)


def test_the_documented_body_has_the_keys_sent(sink: WebhookSink) -> None:
    shown = json.loads(_block("json"))
    sent = _sent(sink, time.time()).json()
    assert sorted(shown) == sorted(sent)
    assert (shown["apiVersion"], shown["kind"]) == (sent["apiVersion"], sent["kind"])
