"""The app reads headers from the WSGI environ itself: the same names and values as werkzeug.

``WsgiHeaders`` replaces werkzeug's ``EnvironHeaders`` on the hook route (one environ lookup
per header a verifier asks for, instead of a dict of every header per delivery), so it must
answer exactly what werkzeug would, lower-cased (R2 verifies over what it returns).
"""

from __future__ import annotations

from typing import Any

import pytest
from werkzeug.datastructures import EnvironHeaders

from services.receiver.app import WsgiHeaders
from services.receiver.verify import header

ENVIRONS: list[dict[str, Any]] = [
    {
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": "12",
        "HTTP_X_HUB_SIGNATURE_256": "sha256=ab",
        "HTTP_X_GITHUB_EVENT": "push",
        "HTTP_USER_AGENT": "GitHub-Hookshot/1",
        "wsgi.input": object(),
    },
    # an empty content type, and the HTTP_ copies werkzeug leaves out
    {"CONTENT_TYPE": "", "HTTP_CONTENT_TYPE": "text/plain", "HTTP_CONTENT_LENGTH": "3"},
    # an empty header value is still a header; latin-1 text is passed through as decoded
    {"HTTP_X_GITLAB_TOKEN": "", "HTTP_X_GITEA_SIGNATURE": "caf\u00e9", "SERVER_NAME": "h"},
]


@pytest.mark.parametrize("environ", ENVIRONS)
def test_the_same_headers_as_werkzeug(environ: dict[str, Any]) -> None:
    expected = {name.lower(): value for name, value in EnvironHeaders(environ).items()}
    ours = WsgiHeaders(environ)
    assert dict(ours) == expected
    assert len(ours) == len(expected)
    for name, value in expected.items():
        assert header(ours, name.upper()) == value
    for absent in ("x-forgejo-signature", "server-name", "request-method", "wsgi.input"):
        assert absent not in expected and header(ours, absent) == ""
