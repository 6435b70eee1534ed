"""Smart HTTP for real git clients: a WSGI app in front of ``git http-backend``.

Each request runs ``git http-backend`` as a CGI program (facts §2.3): GIT_PROJECT_ROOT points at
the host's folder, GIT_HTTP_EXPORT_ALL serves every repository, and REMOTE_USER is set because
http-backend refuses receive-pack (push) to anonymous users. Bodies git sends with
``Transfer-Encoding: chunked`` (pushes over ``http.postBuffer``, about 1 MB) reach the backend
de-chunked with a Content-Length; gzip'ed bodies pass through as they are, with their
``Content-Encoding`` header, because http-backend inflates them itself.

Pushes to one repository are serialised; the refs read just before and just after each
``git-receive-pack`` POST tell the listener exactly which refs that push moved.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from werkzeug.serving import WSGIRequestHandler

from sandbox.githost import gitrepo
from sandbox.githost.gitrepo import Refs

LOG = logging.getLogger(__name__)
Environ = dict[str, Any]
StartResponse = Callable[[str, list[tuple[str, str]]], Any]
PushListener = Callable[[str, Refs, Refs, str], None]
ANONYMOUS = "sandbox"
REALM = 'Basic realm="sandbox git host"'
# CGI variables copied to http-backend besides every HTTP_* header.
CGI_VARS = ("REQUEST_METHOD", "QUERY_STRING", "CONTENT_TYPE", "REMOTE_ADDR", "SERVER_PROTOCOL")
DROPPED_HEADERS = ("HTTP_AUTHORIZATION", "HTTP_TRANSFER_ENCODING", "HTTP_CONTENT_LENGTH")


class QuietRequestHandler(WSGIRequestHandler):
    """werkzeug's handler without the access log: one clone is several requests."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return


class GitHttpApp:
    """The WSGI application: basic auth, repository lookup, the CGI bridge, push detection."""

    def __init__(
        self,
        root: Path,
        locks: Mapping[str, threading.Lock],
        on_push: PushListener,
        auth: tuple[str, str] | None = None,
    ) -> None:
        self._root = root
        self._locks = locks
        self._on_push = on_push
        self._auth = auth

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        body = read_body(environ)  # always drained, so a kept-alive connection stays in step
        user = self._authenticate(environ)
        if user is None:
            return _respond(
                start_response,
                "401 Unauthorized",
                b"authentication required\n",
                [("WWW-Authenticate", REALM)],
            )
        repo, _, rest = environ.get("PATH_INFO", "").lstrip("/").partition(".git/")
        lock = self._locks.get(repo)
        if lock is None or not rest:
            return _respond(start_response, "404 Not Found", b"no such repository\n")
        if environ.get("REQUEST_METHOD") == "POST" and rest == "git-receive-pack":
            with lock:
                before = gitrepo.read_refs(self._repo_path(repo))
                status, headers, out = self._backend(environ, body, user)
                after = gitrepo.read_refs(self._repo_path(repo))
                if before != after:
                    self._notify(repo, before, after, user)
        else:
            status, headers, out = self._backend(environ, body, user)
        return _respond(start_response, status, out, headers)

    def _notify(self, repo: str, before: Refs, after: Refs, user: str) -> None:
        """Tell the listener; the push itself has succeeded whatever the listener meets."""
        try:
            self._on_push(repo, before, after, user)
        except gitrepo.GitError:
            LOG.exception("could not describe the push to %s for its webhooks", repo)

    def _repo_path(self, repo: str) -> Path:
        return self._root / f"{repo}.git"

    def _authenticate(self, environ: Environ) -> str | None:
        """The user name, ANONYMOUS without configured auth, None when credentials are wrong."""
        if self._auth is None:
            return ANONYMOUS
        scheme, _, encoded = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        want_user, want_password = self._auth
        ok_user = hmac.compare_digest(user.encode(), want_user.encode())
        ok_password = hmac.compare_digest(password.encode(), want_password.encode())
        return user if ok_user and ok_password else None

    def _backend(
        self, environ: Environ, body: bytes, user: str
    ) -> tuple[str, list[tuple[str, str]], bytes]:
        """Run ``git http-backend`` for one request and split its CGI answer."""
        proc = subprocess.run(
            ["git", "http-backend"],
            input=body,
            env=cgi_environment(environ, self._root, user, len(body)),
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0 and not proc.stdout:
            return "500 Internal Server Error", [], proc.stderr
        return parse_cgi(proc.stdout)


def cgi_environment(environ: Environ, root: Path, user: str, length: int) -> dict[str, str]:
    """The environment of one http-backend run: CGI variables plus the request's headers."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "GATEWAY_INTERFACE": "CGI/1.1",
        "GIT_PROJECT_ROOT": str(root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "REMOTE_USER": user,
        "PATH_INFO": environ.get("PATH_INFO", ""),
        "CONTENT_LENGTH": str(length),
    }
    env.update({k: str(environ[k]) for k in CGI_VARS if k in environ})
    headers = {k: str(v) for k, v in environ.items() if k.startswith("HTTP_")}
    env.update({k: v for k, v in headers.items() if k not in DROPPED_HEADERS})
    return env


def read_body(environ: Environ) -> bytes:
    """The whole request body, whether sized, terminated by the server, or still chunked."""
    stream: IO[bytes] = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH") or ""
    if length.strip():
        return stream.read(int(length))
    if environ.get("wsgi.input_terminated"):
        return stream.read()
    if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        return dechunk(stream)
    return b""


def dechunk(stream: IO[bytes]) -> bytes:
    """Decode an HTTP/1.1 chunked body (RFC 9112 §7.1) for servers that pass it raw."""
    parts: list[bytes] = []
    while True:
        size_line = stream.readline()
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while stream.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailer fields, unused
            return b"".join(parts)
        parts.append(stream.read(size))
        stream.readline()  # the CRLF after each chunk


def parse_cgi(output: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    """Split a CGI response into status, headers and body (``Status:`` defaults to 200)."""
    head, sep, body = output.partition(b"\r\n\r\n")
    if not sep:
        head, _, body = output.partition(b"\n\n")
    status = "200 OK"
    headers = []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = value.strip()
        elif name:
            headers.append((name.strip(), value.strip()))
    return status, headers, body


def _respond(
    start_response: StartResponse,
    status: str,
    body: bytes,
    headers: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    extra = [(k, v) for k, v in headers or [] if k.lower() != "content-length"]
    start_response(status, [*extra, ("Content-Length", str(len(body)))])
    return [body]
