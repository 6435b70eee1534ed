"""Property: no input yields a 500 (R3), forged or correctly signed.

Random methods, paths, headers, content types and bodies (chunked or not) reach the app with a
healthy store, so every answer must be one of R3's client answers, with a JSON body. Then the
same with bodies correctly signed for each receiver type, which takes random content past
verification into the parsers (facts: ../shared/facts/webhooks-git-libs.md §1.7, crafted
payloads that crashed Argo CD's handlers).
"""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.test import TestResponse

from shared.model.receivers import RECEIVER_TYPES
from tests.unit.receiver.rig import make_rig
from tests.unit.receiver.samples import SECRET, basic_auth, mac

CLIENT_ANSWERS = {200, 202, 400, 401, 404, 405, 413}
TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-ABCXYZ0123456789", min_size=1, max_size=20)
VALUE = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=255, exclude_characters="\x7f"),
    max_size=80,
)
KNOWN_HEADERS = st.sampled_from(
    [
        "X-GitHub-Event",
        "X-GitHub-Delivery",
        "X-Hub-Signature-256",
        "X-Hub-Signature",
        "X-Gitea-Signature",
        "X-Forgejo-Signature",
        "X-Gitea-Event",
        "X-Gitlab-Token",
        "X-Gitlab-Event",
        "X-Event-Key",
        "X-Signature",
        "Idempotency-Key",
        "Content-Type",
    ]
)
HEADERS = st.dictionaries(KNOWN_HEADERS | TOKEN, VALUE, max_size=8)
CONTENT_TYPES = (
    st.sampled_from(
        [
            "application/json",
            "application/x-www-form-urlencoded",
            "text/plain",
            "",
            "application/json; charset=utf-8",
        ]
    )
    | VALUE
)
EVENTS = (
    st.sampled_from(
        [
            "push",
            "ping",
            "create",
            "delete",
            "issues",
            "Push Hook",
            "Tag Push Hook",
            "System Hook",
            "repo:push",
            "repo:refs_changed",
            "diagnostics:ping",
        ]
    )
    | VALUE
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "ref",
                    "after",
                    "sha",
                    "ref_type",
                    "object_kind",
                    "repository",
                    "changes",
                    "push",
                    "project",
                    "new",
                    "clone_url",
                    "links",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)
RIG = make_rig()
PATHS = {kind: RIG.add(kind, name=f"gp-{kind}", branches=("main", "x")) for kind in RECEIVER_TYPES}


def _check(response: TestResponse, method: str) -> None:
    assert response.status_code in CLIENT_ANSWERS, (response.status_code, response.get_data())
    if method != "HEAD":
        body = response.get_json()
        assert set(body) == {"status", "reason"}


REQUESTS = st.fixed_dictionaries(
    {
        "method": st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]),
        "path": st.sampled_from(sorted(PATHS.values()))
        | st.builds(lambda t: "/hook/" + t, TOKEN)
        | st.builds(lambda t: "/" + t, TOKEN),
        "headers": HEADERS,
        "content_type": CONTENT_TYPES,
        "body": st.binary(max_size=2000),
        "chunked": st.booleans(),
    }
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(sent=REQUESTS)
def test_no_request_yields_a_server_error(sent: dict[str, Any]) -> None:
    """R3: never a 500 (nor a 503 while Redis and the Secrets are there) for client input."""
    method, path, body = sent["method"], sent["path"], sent["body"]
    headers = {**sent["headers"], "Content-Type": sent["content_type"]}
    if sent["chunked"]:
        response = RIG.client.open(
            path,
            method=method,
            input_stream=io.BytesIO(body),
            headers={**headers, "Transfer-Encoding": "chunked"},
            environ_overrides={"wsgi.input_terminated": True},
        )
    else:
        response = RIG.client.open(path, method=method, data=body, headers=headers)
    _check(response, method)


def _signed_headers(kind: str, body: bytes, content_type: str, event: str) -> dict[str, str]:
    signature = mac(body)
    return {
        "github": {"X-Hub-Signature-256": "sha256=" + signature, "X-GitHub-Event": event},
        "gitea": {"X-Gitea-Signature": signature, "X-Gitea-Event": event},
        "gitlab": {"X-Gitlab-Token": SECRET.decode(), "X-Gitlab-Event": event},
        "bitbucket": {"X-Hub-Signature": "sha256=" + signature, "X-Event-Key": event},
        "azure-devops": {"Authorization": basic_auth("hook", SECRET)},
        "generic-hmac": {"X-Signature": "sha256=" + signature},
    }[kind] | {"Content-Type": content_type}


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    kind=st.sampled_from(RECEIVER_TYPES),
    event=EVENTS,
    document=JSON.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=500),
    content_type=st.sampled_from(["application/json", "text/plain", ""]),
)
def test_no_signed_content_yields_a_server_error(
    kind: str, event: str, document: bytes, content_type: str
) -> None:
    """R3: past a valid signature, anything is 200/202 or a 400 (malformed), never 5xx."""
    headers: dict[str, Any] = _signed_headers(kind, document, content_type, event)
    response = RIG.client.post(PATHS[kind], data=document, headers=headers)
    _check(response, "POST")
    assert response.status_code in {200, 202, 400}, response.get_json()
