"""Real signed deliveries from the sandbox Git host to the receiver under gunicorn (R1-R5).

Each push to a sandbox repository makes the host send its webhook exactly as GitHub (JSON or
form), Gitea (JSON or form) or GitLab would (../shared/facts/webhooks-git-libs.md §1.1-1.4);
the receiver, a separate gunicorn process configured as in production (Settings from the
environment, the Secret read through shared.kube from the Kubernetes API double), must end
each of them as exactly one notice on the branch's stream.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sandbox.githost import Hook
from shared.model.ids import Branch
from shared.model.notices import PushNotice
from shared.store.notice_reader import NoticeReader
from tests.integration.receiver.conftest import LIMIT, Stack
from tests.sandbox.integration.test_githost_support import Git

pytestmark = pytest.mark.integration

DELIVERY_TIMEOUT_S = 15.0


def notices(stack: Stack, repo_url: str) -> list[PushNotice]:
    return NoticeReader(stack.redis, stack.keys).read(Branch(repo_url, "main").key, count=100)


def push_once(git: Git, repo_url: str, work: Path) -> str:
    """Clone, commit one file, push to main; returns the new tip."""
    clone = git.clone(repo_url, work)
    sha = git.commit(clone, "apps/app.yaml", b"replicas: 2\n", "scale up")
    git.run("push", "--quiet", "origin", "HEAD:main", cwd=clone)
    return sha


@pytest.mark.parametrize(
    ("provider", "content_type", "kind"),
    [
        ("github", "json", "github"),
        ("github", "form", "github"),
        ("gitea", "json", "gitea"),
        ("gitea", "form", "gitea"),
        ("forgejo", "form", "gitea"),
        ("gitlab", "json", "gitlab"),
    ],
)
def test_a_real_push_ends_as_exactly_one_notice(
    stack: Stack, tmp_path: Path, provider: str, content_type: str, kind: str
) -> None:
    """R2-R4 with facts §1.1 (GitHub signs the raw, also form, body), §1.2/§1.3 (Gitea and
    Forgejo sign the JSON inside ``payload``), §1.4 (GitLab's plain token)."""
    name = f"{provider}-{content_type}"
    repo_url = stack.host.create_repo(name, files={"README.md": b"hello\n"})
    token = f"token for {name}"
    hook_url = stack.receiver(kind, name, repo_url, token)  # type: ignore[arg-type]
    stack.host.add_hook(name, Hook(hook_url, provider, content_type, token))  # type: ignore[arg-type]
    sha = push_once(Git(tmp_path / "home"), repo_url, tmp_path / "work")
    [delivery] = stack.host.wait_for_deliveries(1, DELIVERY_TIMEOUT_S, repo=name)
    assert (delivery.status, delivery.error) == (202, None)
    [notice] = notices(stack, repo_url)
    assert (notice.provider, notice.ref, notice.after) == (f"team/{name}", "refs/heads/main", sha)
    assert notice.delivery == delivery.id


def test_a_replayed_delivery_stores_nothing_new(stack: Stack, tmp_path: Path) -> None:
    """R4: the host sends the same delivery twice, then a user presses "redeliver": one notice."""
    repo_url = stack.host.create_repo("replayed", files={"README.md": b"hello\n"})
    hook = Hook(stack.receiver("github", "replayed", repo_url, "s3"), "github", "json", "s3")
    stack.host.add_hook("replayed", hook)
    stack.host.repeat_next("replayed", times=2)
    push_once(Git(tmp_path / "home"), repo_url, tmp_path / "work")
    first, second = stack.host.wait_for_deliveries(2, DELIVERY_TIMEOUT_S, repo="replayed")
    assert first.id == second.id and (first.status, second.status) == (202, 202)
    again = stack.host.redeliver(first.id)
    assert again.status == 202
    assert len(notices(stack, repo_url)) == 1


def test_a_wrong_secret_is_refused_and_stores_nothing(stack: Stack, tmp_path: Path) -> None:
    """R2/R3: the host signs with another secret than the Secret holds: 401."""
    repo_url = stack.host.create_repo("forged", files={"README.md": b"hello\n"})
    hook_url = stack.receiver("gitea", "forged", repo_url, "the real token")
    stack.host.add_hook("forged", Hook(hook_url, "gitea", "json", "a guess"))
    push_once(Git(tmp_path / "home"), repo_url, tmp_path / "work")
    [delivery] = stack.host.wait_for_deliveries(1, DELIVERY_TIMEOUT_S, repo="forged")
    assert delivery.status == 401
    assert notices(stack, repo_url) == []


def _chunked_post(url: str, total: int) -> tuple[int, dict[str, str]]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.putrequest("POST", parts.path)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("X-GitHub-Event", "push")
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        chunk, sent = b"x" * 8192, 0
        while sent < total:
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
        connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_a_chunked_body_over_the_limit_is_413(stack: Stack) -> None:
    """R3 / facts §3.7: a chunked body slips past Flask's MAX_CONTENT_LENGTH under gunicorn;
    ours stops it. (Only a little over the limit, so gunicorn drains the rest cleanly.)"""
    repo_url = stack.host.create_repo("big", files={"README.md": b"hello\n"})
    url = stack.receiver("github", "big", repo_url, "s3")
    status, body = _chunked_post(url, LIMIT + 16 * 1024)
    assert (status, body["status"]) == (413, "too_large")
    status, body = _chunked_post(url, 4 * 1024)  # within the limit: read whole, then refused
    assert (status, body["status"]) == (401, "unauthorized")


def _get(url: str, path: str, method: str = "GET") -> tuple[int, bytes]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _not_found_count(url: str) -> float:
    text = _get(url, "/metrics")[1].decode()
    line = 'gitops_reverser_receiver_deliveries_total{result="not_found",type="unknown"} '
    values = [float(x.removeprefix(line)) for x in text.splitlines() if x.startswith(line)]
    return values[0] if values else 0.0


def test_gunicorn_runs_as_configured(stack: Stack) -> None:
    """Facts §3.7: no control socket under HOME; §3.5: the multiprocess directory is wiped at
    start and a scrape sums the counters of every worker; R1: health and readiness."""
    url = stack.gunicorn.url
    assert not (stack.gunicorn.home / ".gunicorn").exists()
    assert not (stack.gunicorn.metrics_dir / "stale").exists()
    assert _get(url, "/healthz")[0] == 200 and _get(url, "/readyz")[0] == 200
    before = _not_found_count(url)
    for _ in range(20):  # a new connection each: the two workers share them
        assert _get(url, "/hook/" + "0" * 64, "POST")[0] == 404
    assert _not_found_count(url) - before == 20


def test_every_line_gunicorn_and_the_app_print_is_json(stack: Stack) -> None:
    """Issue 26 §5: the arbiter's and workers' own lines (listening, booting) are JSON objects
    like the app's, so a log pipeline parses every line of the receiver."""
    assert _get(stack.gunicorn.url, "/hook/" + "1" * 64, "POST")[0] == 404
    lines = [line for line in list(stack.gunicorn.lines) if line.strip()]
    entries = [json.loads(line) for line in lines]  # fails on any plain-text line
    gunicorn_said = [e["message"] for e in entries if e["logger"] == "gunicorn.error"]
    assert any(m.startswith("Listening at: http://") for m in gunicorn_said)
    assert any(m.startswith("Booting worker") for m in gunicorn_said)
