"""A Git host behind a private CA, and a proxy (issue 24 item 6).

A GitProvider's Secret may hold ``ca.crt`` (Flux's key): every caller that talks to the remote
(the branch worker's working copy, the watcher's probe, the dispatcher's tip read, all through
``shared.git.credentials``) then verifies HTTPS against it. Without it, git refuses the host
and the error names the certificate. ``HTTPS_PROXY``/``NO_PROXY`` in the process environment
(the chart's ``extraEnv``) reach every git call.
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.githost import GitHost
from shared.git.auth import env_for_secret, keeps_files
from shared.git.credentials import resolved_once
from shared.git.errors import GitError
from shared.git.remote import ls_remote
from shared.git.workspace import Committer, Workspace
from tests.integration.git.tls_support import PASSWORD, USER, PrivateCa, https_host, make_ca

pytestmark = pytest.mark.integration


@pytest.fixture
def ca(tmp_path: Path) -> PrivateCa:
    return make_ca(tmp_path / "ca")


@pytest.fixture
def host(tmp_path: Path, ca: PrivateCa) -> Iterator[GitHost]:
    with https_host(tmp_path, ca) as running:
        yield running


def _secret(ca: PrivateCa | None) -> dict[str, bytes]:
    secret = {"username": USER.encode(), "password": PASSWORD.encode()}
    return {**secret, "ca.crt": ca.ca_pem} if ca else secret


def test_the_secrets_ca_is_trusted_and_nothing_else_is(
    host: GitHost, ca: PrivateCa, tmp_path: Path
) -> None:
    url = host.repo_url("team/private")
    assert url.startswith("https://")
    env = env_for_secret(_secret(ca), tmp_path / "files")
    assert keeps_files(env)
    assert ls_remote(url, "main", env) is not None
    with pytest.raises(GitError, match="certificate"):
        ls_remote(url, "main", env_for_secret(_secret(None), tmp_path / "none"))
    other = make_ca(tmp_path / "other")  # a CA that did not sign the host's certificate
    with pytest.raises(GitError, match="certificate"):
        ls_remote(url, "main", env_for_secret(_secret(other), tmp_path / "other-files"))


def test_a_working_copy_fetches_and_pushes_through_the_private_ca(
    host: GitHost, ca: PrivateCa, tmp_path: Path
) -> None:
    url = host.repo_url("team/private")
    env = env_for_secret(_secret(ca), tmp_path / "files")
    ws = Workspace(tmp_path / "ws", url, "main", env=env)
    tip = ws.fetch()
    ws.reset(tip)
    ws.write("clusters/a.yaml", b"a: 1\n")
    ws.commit("over https", Committer("t", "t@x"))
    assert ws.push(tip).pushed
    assert ls_remote(url, "main", env) == ws.head()
    config = (tmp_path / "ws" / ".git" / "config").read_text()
    assert "ca.crt" not in config and PASSWORD not in config


def test_a_one_shot_read_uses_the_ca_and_removes_it_after(host: GitHost, ca: PrivateCa) -> None:
    """The dispatcher's tip read and the watcher's probe read the Secret for one call."""
    url = host.repo_url("team/private")
    with resolved_once(lambda ns, name: _secret(ca), "team", "creds") as env:
        assert ls_remote(url, "main", env) is not None
        ca_file = Path(env["GIT_SSL_CAINFO"])
        assert ca_file.read_bytes() == ca.ca_pem
    assert not ca_file.exists()


class ConnectProxy:
    """An HTTP CONNECT proxy on loopback that records where it was asked to tunnel."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.targets: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.close()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        target = head.split(b" ")[1].decode()
        self.targets.append(target)
        name, _, port = target.rpartition(":")
        upstream = socket.create_connection((name, int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        _pump(client, upstream)


def _pump(a: socket.socket, b: socket.socket) -> None:
    with a, b:
        while True:
            ready, _, _ = select.select([a, b], [], [])
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                (b if sock is a else a).sendall(data)


def test_https_proxy_from_the_environment_is_honoured(
    host: GitHost, ca: PrivateCa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = ConnectProxy()
    try:
        url = host.repo_url("team/private")
        env = env_for_secret(_secret(ca), tmp_path / "files")
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert ls_remote(url, "main", env) is not None
        assert set(proxy.targets) == {f"127.0.0.1:{host.port}"}  # one tunnel per connection
        tunnels = len(proxy.targets)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert ls_remote(url, "main", env) is not None
        assert len(proxy.targets) == tunnels  # NO_PROXY: straight to the host
    finally:
        proxy.close()
