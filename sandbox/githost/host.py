"""The sandbox Git host: bare repositories over smart HTTP that send push webhooks.

``GitHost`` ties the pieces together: it creates repositories, serves them with
``server.GitHttpApp`` on a threaded werkzeug server, turns every push into one delivery per
moved ref and matching hook (``pushes`` reads the facts, ``payloads`` shapes them, ``signing``
encodes and signs them) and hands those to ``hooks.Sender``, which posts them in the
background and records the outcome. Faults (drop, delay, repeat) are queued per repository
and consumed by its next deliveries, in order.
"""

from __future__ import annotations

import re
import ssl
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server

from sandbox.githost import gitrepo, payloads, pushes
from sandbox.githost.gitrepo import Refs
from sandbox.githost.hooks import Delivery, Fault, Hook, Request, Sender
from sandbox.githost.payloads import RepoSite
from sandbox.githost.server import GitHttpApp, QuietRequestHandler
from sandbox.githost.signing import Envelope, encode

DEFAULT_OWNER = "sandbox"
SHUTDOWN_POLL_SECONDS = 0.05  # how often serve_forever checks for stop(); werkzeug's 0.5 s is slow
REPO_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)?$")


@dataclass(slots=True)
class _Repo:
    """A hosted repository: its identity, its push lock, its hooks and pending faults."""

    site_id: int
    full_name: str
    path: Path
    default_branch: str
    created_at: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    hooks: list[Envelope] = field(default_factory=list)
    faults: deque[Fault] = field(default_factory=deque)


class GitHost:
    """Bare repositories served over smart HTTP, sending signed webhooks on every push."""

    def __init__(
        self,
        root: Path,
        *,
        auth: tuple[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        self._root = Path(root)
        self._auth = auth
        self._tls = tls  # (certificate chain, key) PEM files: serve HTTPS, as a real host does
        self._clock = clock
        self._repos: dict[str, _Repo] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._state = threading.Lock()
        self._sender = Sender(clock)
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._hook_numbers = 0
        self.url = ""
        self.port = 0

    # lifecycle --------------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on ``host:port`` (0 picks a free port) and return the base URL."""
        if self._server is not None:
            raise RuntimeError("the git host is already running")
        self._root.mkdir(parents=True, exist_ok=True)
        app = GitHttpApp(self._root, self._locks, self._pushed, self._auth)
        context = None
        if self._tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self._tls)
        self._server = make_server(
            host,
            port,
            app,
            threaded=True,
            request_handler=QuietRequestHandler,
            ssl_context=context,
        )
        self.port = self._server.server_port
        self.url = f"{'https' if context else 'http'}://{host}:{self.port}"
        self._sender.start()
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(SHUTDOWN_POLL_SECONDS,),
            name="githost-http",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop serving and sending; queued deliveries are abandoned."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._sender.stop()
        self._server = self._thread = None

    # repositories and hooks -------------------------------------------------------------

    def create_repo(
        self, name: str, *, default_branch: str = "main", files: Mapping[str, bytes] | None = None
    ) -> str:
        """Create a bare repository (with one commit of ``files``) and return its clone URL.

        ``name`` is ``repo`` (owned by "sandbox") or ``owner/repo``. Needs ``start()`` first.
        """
        if not self.url:
            raise RuntimeError("start() the git host before creating repositories")
        full_name = self._full_name(name)
        path = self._root / f"{full_name}.git"
        with self._state:
            if full_name in self._repos:
                raise ValueError(f"repository {full_name} exists")
            gitrepo.init_bare(path, default_branch)
            if files:
                gitrepo.write_initial_commit(path, default_branch, files, self._clock())
            repo = _Repo(len(self._repos) + 1, full_name, path, default_branch, int(self._clock()))
            self._repos[full_name] = repo
            self._locks[full_name] = repo.lock
        return self.repo_url(full_name)

    def repo_url(self, name: str) -> str:
        """The clone URL of a repository (``<base URL>/<owner>/<repo>.git``)."""
        if not self.url:
            raise RuntimeError("the git host is not running")
        return f"{self.url}/{self._full_name(name)}.git"

    def repo_path(self, name: str) -> Path:
        """Where the bare repository lives on disk."""
        return self._repo(name).path

    def add_hook(self, repo: str, hook: Hook) -> None:
        """Send ``hook.events`` of ``repo`` to ``hook.url`` from now on."""
        record = self._repo(repo)
        with self._state:
            self._hook_numbers += 1
            envelope = Envelope(
                hook, self._hook_numbers, str(uuid.uuid4()), record.site_id, self.url
            )
            record.hooks.append(envelope)

    # deliveries -------------------------------------------------------------------------

    def deliveries(self, repo: str | None = None) -> list[Delivery]:
        """Every recorded delivery (of ``repo``), in the order they completed."""
        return self._sender.deliveries(self._full_name(repo) if repo else None)

    def wait_for_deliveries(
        self, count: int, timeout: float, repo: str | None = None
    ) -> list[Delivery]:
        """Block until at least ``count`` deliveries are recorded; TimeoutError otherwise."""
        return self._sender.wait_for(count, timeout, self._full_name(repo) if repo else None)

    def drop_next(self, repo: str, n: int = 1) -> None:
        """Record the next ``n`` deliveries of ``repo`` with error "dropped" and send nothing."""
        self._add_faults(repo, [Fault("drop")] * n)

    def delay_next(self, repo: str, seconds: float, n: int = 1) -> None:
        """Hold the next ``n`` deliveries of ``repo`` back by ``seconds``; later ones overtake."""
        self._add_faults(repo, [Fault("delay", seconds)] * n)

    def repeat_next(self, repo: str, times: int = 2) -> None:
        """Send the next delivery of ``repo`` ``times`` times, same id and body (a replay)."""
        self._add_faults(repo, [Fault("repeat", times)])

    def redeliver(self, delivery_id: str, hook: Hook | None = None) -> Delivery:
        """Send a recorded delivery again now, same id and body, like the hosts' button.

        GitHub gives every hook of a repository the same id for one event; when several hooks
        got ``delivery_id``, ``hook`` picks the one to send it to (ValueError otherwise).
        """
        return self._sender.redeliver(delivery_id, hook)

    # internals --------------------------------------------------------------------------

    def _full_name(self, name: str) -> str:
        name = name.removesuffix(".git")
        if not REPO_NAME.match(name):
            raise ValueError(f"bad repository name {name!r}")
        return name if "/" in name else f"{DEFAULT_OWNER}/{name}"

    def _repo(self, name: str) -> _Repo:
        with self._state:
            record = self._repos.get(self._full_name(name))
        if record is None:
            raise KeyError(f"no repository {name!r}")
        return record

    def _add_faults(self, repo: str, faults: list[Fault]) -> None:
        record = self._repo(repo)
        with self._state:
            record.faults.extend(faults)

    def _pushed(self, name: str, before: Refs, after: Refs, user: str) -> None:
        """Called under the repository's push lock with the refs around one receive-pack."""
        record = self._repo(name)
        with self._state:
            hooks = list(record.hooks)
        if not hooks:
            return
        changes = pushes.diff_refs(before, after)
        branches = sum(1 for c in changes if c.is_branch)
        site = self._site(record)
        for change in changes:
            facts = pushes.collect(record.path, change, before, user, branches)
            github_ids: dict[str, str] = {}  # one GUID per event, shared by every GitHub hook
            for envelope in hooks:
                self._enqueue(record, envelope, facts, site, github_ids)

    def _enqueue(
        self,
        record: _Repo,
        envelope: Envelope,
        facts: pushes.PushFacts,
        site: RepoSite,
        github_ids: dict[str, str],
    ) -> None:
        for event, payload in payloads.events_for(envelope.hook.provider, facts, site):
            if event not in envelope.hook.events:
                continue
            delivery_id = str(uuid.uuid4())
            if envelope.hook.provider == "github":
                delivery_id = github_ids.setdefault(event, delivery_id)
            self._submit(record, envelope, event, payload, delivery_id)

    def _submit(
        self, record: _Repo, envelope: Envelope, event: str, payload: Any, delivery_id: str
    ) -> None:
        headers, body = encode(envelope, event, payload, delivery_id)
        with self._state:
            fault = record.faults.popleft() if record.faults else None
        key = f"{delivery_id}#{envelope.hook_number}"
        request = Request(key, record.full_name, delivery_id, envelope.hook, event, headers, body)
        self._sender.submit(request, fault)

    def _site(self, record: _Repo) -> RepoSite:
        owner, _, name = record.full_name.partition("/")
        return RepoSite(
            record.site_id, owner, name, self.url, record.default_branch, record.created_at
        )
