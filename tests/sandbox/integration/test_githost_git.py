"""The git host speaks smart HTTP to the real git CLI: clone, fetch, ls-remote, push, auth."""

from __future__ import annotations

import hashlib
import io
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.githost import GitHost
from sandbox.githost.server import dechunk, parse_cgi
from tests.integration.git.tls_support import PASSWORD as CA_PASS
from tests.integration.git.tls_support import USER as CA_USER
from tests.integration.git.tls_support import https_host, make_ca
from tests.sandbox.integration.test_githost_support import Git, running_host

pytestmark = pytest.mark.integration

USER, PASSWORD = "alice", "s3cret"


@pytest.fixture
def auth_host(tmp_path: Path) -> Iterator[GitHost]:
    yield from running_host(tmp_path / "auth-host", auth=(USER, PASSWORD))


def with_credentials(url: str, user: str = USER, password: str = PASSWORD) -> str:
    return url.replace("http://", f"http://{user}:{password}@", 1)


def test_clone_ls_remote_push_and_fetch(host: GitHost, git: Git, tmp_path: Path) -> None:
    """Real git clones, lists, pushes and fetches through http-backend.

    Fact: ../shared/facts/webhooks-git-libs.md §2.3 (git http-backend behind WSGI, REMOTE_USER
    set so receive-pack is allowed) and §2.1 (``ls-remote --symref`` shows HEAD's target).
    """
    url = host.create_repo("demo", files={"README.md": b"hello\n", "deploy/app.yaml": b"a: 1\n"})
    assert url == f"{host.url}/sandbox/demo.git"
    first = git.clone(url, tmp_path / "first")
    assert (first / "deploy" / "app.yaml").read_bytes() == b"a: 1\n"
    symref = git.run("ls-remote", "--symref", url, "HEAD").stdout
    assert symref.startswith("ref: refs/heads/main\tHEAD")

    second = git.clone(url, tmp_path / "second")
    new = git.commit(first, "deploy/app.yaml", b"a: 2\n", "bump")
    git.run("push", "--quiet", "origin", "main", cwd=first)
    assert git.ls_remote(url)["refs/heads/main"] == new

    git.run("fetch", "--quiet", "origin", cwd=second)
    assert git.head(second, "origin/main") == new


def test_unknown_repository_is_not_found(host: GitHost) -> None:
    """Only created repositories are served: anything else answers 404, as a host does."""
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{host.url}/sandbox/nope.git/info/refs?service=git-upload-pack")
    assert err.value.code == 404


def test_basic_auth_is_enforced(auth_host: GitHost, git: Git, tmp_path: Path) -> None:
    """Without or with wrong credentials git fails fast; with the right ones all works.

    Facts: §2.1 "With GIT_TERMINAL_PROMPT=0, an HTTP 401 fails in about 0.02 s" and the
    challenge is ``WWW-Authenticate: Basic`` (RFC 7617 §2).
    """
    url = auth_host.create_repo("private", files={"f": b"x"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{url}/info/refs?service=git-upload-pack")
    assert err.value.code == 401
    assert err.value.headers["WWW-Authenticate"].startswith("Basic ")

    started = time.monotonic()
    anonymous = git.run("ls-remote", url, check=False, timeout=10)
    wrong = git.run(
        "clone",
        with_credentials(url, password="nope"),
        str(tmp_path / "w"),
        check=False,
        timeout=10,
    )
    assert anonymous.returncode != 0 and wrong.returncode != 0
    assert "Authentication failed" in wrong.stderr
    assert time.monotonic() - started < 5

    work = git.clone(with_credentials(url), tmp_path / "ok")
    new = git.commit(work, "f", b"y", "change")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    assert git.ls_remote(with_credentials(url))["refs/heads/main"] == new


def test_large_push_arrives_chunked_and_lands(host: GitHost, git: Git, tmp_path: Path) -> None:
    """A push over http.postBuffer (1 MiB) is sent chunked and must still be received whole.

    Facts: §2.3 "a push over about 1 MB ... is sent with Transfer-Encoding: chunked";
    git/git remote-curl.c ``post_rpc``: a ``large_request`` adds "Transfer-Encoding: chunked".
    """
    url = host.create_repo("big", files={"seed": b"0"})
    work = git.clone(url, tmp_path / "work")
    blob = os.urandom(3 * 1024 * 1024)  # random, so compression cannot shrink it under 1 MiB
    new = git.commit(work, "blob.bin", blob, "large")
    trace = git.run(
        "push",
        "origin",
        "main",
        cwd=work,
        env={"GIT_TRACE_CURL": "1", "GIT_TRACE_CURL_NO_DATA": "1"},
    ).stderr
    assert "Transfer-Encoding: chunked" in trace
    assert git.ls_remote(url)["refs/heads/main"] == new
    again = git.clone(url, tmp_path / "again")
    assert hashlib.sha256((again / "blob.bin").read_bytes()).digest() == (
        hashlib.sha256(blob).digest()
    )


def test_gzip_request_bodies_reach_http_backend(host: GitHost, git: Git, tmp_path: Path) -> None:
    """A fetch whose request exceeds 1 KiB is gzip'ed by git and must still work.

    Fact: git/git remote-curl.c ``post_rpc``: ``use_gzip && 1024 < rpc->len`` sends
    "Content-Encoding: gzip" (fetches set ``gzip_request``); http-backend inflates it itself.
    """
    url = host.create_repo("gz", files={"seed": b"0"})
    pusher = git.clone(url, tmp_path / "pusher")
    fetcher = git.clone(url, tmp_path / "fetcher")
    for i in range(30):  # 30 tags on 30 commits: 30 "want" lines, over 1 KiB in one request
        git.commit(pusher, "f", str(i).encode(), f"change {i}")
        git.run("tag", f"t{i}", cwd=pusher)
    git.run("push", "--quiet", "origin", "main", "--tags", cwd=pusher)
    trace = git.run(
        "fetch",
        "--tags",
        "origin",
        cwd=fetcher,
        env={"GIT_TRACE_CURL": "1", "GIT_TRACE_CURL_NO_DATA": "1"},
    ).stderr
    assert "Content-Encoding: gzip" in trace
    assert git.head(fetcher, "t29") == git.head(pusher)


def test_non_fast_forward_push_is_rejected(host: GitHost, git: Git, tmp_path: Path) -> None:
    """A stale clone's plain push is refused and the branch keeps the other push.

    Fact: §2.2 table, "stale clone, plain push (non-ff)": ``[rejected] (fetch first)``.
    """
    url = host.create_repo("race", files={"f": b"0"})
    one, two = git.clone(url, tmp_path / "one"), git.clone(url, tmp_path / "two")
    winner = git.commit(one, "f", b"1", "one")
    git.run("push", "--quiet", "origin", "main", cwd=one)
    git.commit(two, "f", b"2", "two")
    lost = git.run("push", "--porcelain", "origin", "main", cwd=two, check=False)
    assert lost.returncode != 0
    assert "[rejected]" in lost.stdout and "fetch first" in lost.stdout
    assert git.ls_remote(url)["refs/heads/main"] == winner


def test_force_with_lease_is_a_compare_and_swap(host: GitHost, git: Git, tmp_path: Path) -> None:
    """``--force-with-lease`` with a stale expectation is rejected; with the current one it wins.

    Fact: §2.2 table, ``force_with_lease=refs/heads/main:<stale sha>`` gives
    ``[rejected] (stale info)`` and ``:<current sha>`` a forced update.
    """
    url = host.create_repo("cas", files={"f": b"0"})
    work = git.clone(url, tmp_path / "work")
    base = git.head(work)
    moved = git.commit(work, "f", b"1", "moved")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    git.run("reset", "--quiet", "--hard", base, cwd=work)
    mine = git.commit(work, "g", b"2", "rewrite")
    stale = git.run(
        "push",
        "--porcelain",
        f"--force-with-lease=refs/heads/main:{base}",
        "origin",
        "HEAD:refs/heads/main",
        cwd=work,
        check=False,
    )
    assert stale.returncode != 0 and "stale info" in stale.stdout
    assert git.ls_remote(url)["refs/heads/main"] == moved
    git.run(
        "push",
        "--quiet",
        f"--force-with-lease=refs/heads/main:{moved}",
        "origin",
        "HEAD:refs/heads/main",
        cwd=work,
    )
    assert git.ls_remote(url)["refs/heads/main"] == mine


def test_dechunk_decodes_a_raw_chunked_body() -> None:
    """Servers that pass chunked bodies through raw get them decoded (RFC 9112 §7.1)."""
    raw = b"4;ext=1\r\nWiki\r\n6\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\n"
    assert dechunk(io.BytesIO(raw)) == b"Wikipedia in \r\n\r\nchunks."


def test_parse_cgi_reads_status_and_headers() -> None:
    """A CGI answer without ``Status:`` is 200 (RFC 3875 §6.3.3); with one it is that status."""
    assert parse_cgi(b"Content-Type: text/plain\r\n\r\nbody") == (
        "200 OK",
        [("Content-Type", "text/plain")],
        b"body",
    )
    assert parse_cgi(b"Status: 404 Not Found\nExpires: 0\n\nnope")[0] == "404 Not Found"


def test_https_serves_the_same_protocol_with_a_certificate(git: Git, tmp_path: Path) -> None:
    """With ``tls`` the host serves smart HTTP over TLS (a real host behind a private CA, for
    issue 24 item 6): git clones once told the CA (``GIT_SSL_CAINFO``) and refuses without.

    Fact: ../shared/facts/webhooks-git-libs.md §2.3 (the same http-backend exchange; TLS only
    wraps the connection).
    """
    ca = make_ca(tmp_path / "ca")
    with https_host(tmp_path, ca) as host:
        url = host.repo_url("team/private").replace("https://", f"https://{CA_USER}:{CA_PASS}@")
        trusted = {"GIT_SSL_CAINFO": str(tmp_path / "ca.pem")}
        (tmp_path / "ca.pem").write_bytes(ca.ca_pem)
        clone = git.run("clone", "--quiet", url, str(tmp_path / "c"), env=trusted)
        assert clone.returncode == 0 and (tmp_path / "c" / "README.md").exists()
        refused = git.run("ls-remote", url, check=False, env={"GIT_SSL_CAINFO": "/dev/null"})
        assert refused.returncode != 0 and "certificate" in refused.stderr.lower()
