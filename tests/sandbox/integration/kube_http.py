"""Raw HTTP to the Kubernetes API double, for what the typed client refuses to send.

The official client validates bodies client-side (pydantic) and picks content types itself;
tests of server-side validation and of Content-Type handling need the wire unfiltered.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

from sandbox.kube.server import KubeApiServer

KUBECTL = "/usr/bin/kubectl"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def request(
    kube: KubeApiServer,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    *,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, Any]:
    """(status, decoded JSON body, headers) of one request through urllib3."""
    pool = kube.api_client().rest_client.pool_manager
    all_headers = {"Accept": "application/json", "Content-Type": content_type, **(headers or {})}
    payload = body if isinstance(body, str | bytes) or body is None else json.dumps(body)
    response = pool.request(method, kube.url + path, body=payload, headers=all_headers)
    data = json.loads(response.data) if response.data else None
    return response.status, data, response.headers
