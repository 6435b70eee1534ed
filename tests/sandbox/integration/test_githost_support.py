"""Shared pieces of the git host tests: a real git CLI runner and a webhook receiver.

No tests here. The receiver is a tiny werkzeug server on port 0 that records every request
and lets a test wait for them on a condition (never by sleeping); it can hold requests back
(``gate``) and answer any status (``/status/<code>``).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from sandbox.githost import GitHost, Hook

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse

AUTHOR = ("Test Author", "author@example.invalid")


class Git:
    """The real git CLI with an isolated HOME and no prompts."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": AUTHOR[0],
            "GIT_AUTHOR_EMAIL": AUTHOR[1],
            "GIT_COMMITTER_NAME": AUTHOR[0],
            "GIT_COMMITTER_EMAIL": AUTHOR[1],
        }

    def run(
        self,
        *args: str,
        cwd: Path | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
        return proc

    def clone(self, url: str, dest: Path) -> Path:
        self.run("clone", "--quiet", url, str(dest))
        return dest

    def commit(self, work: Path, name: str, content: bytes, message: str) -> str:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(content)
        self.run("add", name, cwd=work)
        self.run("commit", "--quiet", "-m", message, cwd=work)
        return self.head(work)

    def head(self, work: Path, rev: str = "HEAD") -> str:
        return self.run("rev-parse", rev, cwd=work).stdout.strip()

    def ls_remote(self, url: str) -> dict[str, str]:
        out = self.run("ls-remote", url).stdout
        return {ref: sha for sha, ref in (line.split("\t") for line in out.splitlines())}


@dataclass(frozen=True)
class Received:
    """One request the receiver got; header names lower-cased (HTTP names are case-blind)."""

    path: str
    headers: dict[str, str]
    body: bytes


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return


class Receiver:
    """A webhook endpoint that records requests; ``gate`` holds them until set."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.gate = threading.Event()
        self.gate.set()
        self._cond = threading.Condition()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True, request_handler=_Quiet)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self._server.server_port}{path}"

    def wait(self, count: int, timeout: float = 10) -> list[Received]:
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.requests) >= count, timeout=timeout)
            got = list(self.requests)
        assert ok, f"receiver got {len(got)} of {count} requests"
        return got

    def stop(self) -> None:
        self.gate.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _app(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        self.gate.wait(timeout=30)
        body = request.get_data()
        with self._cond:
            self.requests.append(
                Received(request.path, {k.lower(): v for k, v in request.headers.items()}, body)
            )
            self._cond.notify_all()
        status = int(request.path.rsplit("/", 1)[1]) if "/status/" in request.path else 200
        return Response("ok", status=status)(environ, start_response)


def repo_with_hooks(host: GitHost, git: Git, work: Path, *hooks: Hook) -> tuple[str, Path]:
    url = host.create_repo("demo", files={"app.yaml": b"replicas: 1\n"})
    for hook in hooks:
        host.add_hook("demo", hook)
    return url, git.clone(url, work)


def payload_of(received: Received) -> dict[str, Any]:
    if received.headers["content-type"] == "application/x-www-form-urlencoded":
        return dict(json.loads(parse_qs(received.body.decode())["payload"][0]))
    return dict(json.loads(received.body))


def running_host(root: Path, auth: tuple[str, str] | None = None) -> Iterator[GitHost]:
    """A started GitHost, stopped afterwards (use with ``yield from`` in a fixture)."""
    host = GitHost(root, auth=auth)
    host.start()
    try:
        yield host
    finally:
        host.stop()


def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    try:
        yield receiver
    finally:
        receiver.stop()
