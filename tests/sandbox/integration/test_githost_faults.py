"""Faults the git host injects into its webhook deliveries, and how it survives bad receivers.

Later tests use these to prove the product treats a delivery only as a hint: one can be lost
(dropped), late (delayed past a later one), repeated (a replay), or redelivered by hand.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sandbox.githost import GitHost, Hook
from tests.sandbox.integration.test_githost_support import (
    Git,
    Receiver,
    payload_of,
    repo_with_hooks,
)

pytestmark = pytest.mark.integration

SECRET = "It's a Secret to Everybody"


def push_change(git: Git, work: Path, content: bytes) -> str:
    sha = git.commit(work, "app.yaml", content, "change")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    return sha


def test_drop_then_redeliver(host: GitHost, git: Git, receiver: Receiver, tmp_path: Path) -> None:
    """A dropped delivery is recorded but never sent; "redeliver" later sends the same id and
    body (GitHub does not retry by itself, facts §1.1 "Size and timeout")."""
    _, work = repo_with_hooks(host, git, tmp_path / "w", Hook(receiver.url(), "github"))
    host.drop_next("demo")
    push_change(git, work, b"replicas: 7\n")
    dropped = host.wait_for_deliveries(1, 5, repo="demo")[0]
    assert (dropped.status, dropped.error, dropped.attempt) == (None, "dropped", 1)
    later = push_change(git, work, b"replicas: 8\n")
    first_sent = receiver.wait(1)[0]
    assert payload_of(first_sent)["after"] == later
    again = host.redeliver(dropped.id)
    got = receiver.wait(2)[1]
    assert (again.status, again.attempt, again.id) == (200, 2, dropped.id)
    assert got.headers["x-github-delivery"] == dropped.id and got.body == dropped.body


def test_delay_lets_a_later_delivery_overtake(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """A delayed delivery arrives after a later push's one: receivers must not assume order."""
    _, work = repo_with_hooks(host, git, tmp_path / "w", Hook(receiver.url(), "github"))
    host.delay_next("demo", 1.0)
    early = push_change(git, work, b"replicas: 9\n")
    late = push_change(git, work, b"replicas: 10\n")
    arrived = [payload_of(r)["after"] for r in receiver.wait(2)]
    assert arrived == [late, early]
    assert [d.status for d in host.wait_for_deliveries(2, 5, repo="demo")] == [200, 200]


def test_repeat_replays_the_same_delivery(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """A replay: the same delivery id and byte-identical body sent several times."""
    hook = Hook(receiver.url(), "gitea", secret=SECRET)
    _, work = repo_with_hooks(host, git, tmp_path / "w", hook)
    host.repeat_next("demo", times=3)
    push_change(git, work, b"replicas: 11\n")
    got = receiver.wait(3)
    assert len({r.headers["x-gitea-delivery"] for r in got}) == 1
    assert len({r.body for r in got}) == 1
    recorded = host.wait_for_deliveries(3, 5, repo="demo")
    assert [d.attempt for d in recorded] == [1, 2, 3]


def test_push_does_not_wait_for_the_receiver(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """Deliveries go out in the background: a push completes while its webhook is still held
    (facts §1.1: hosts time out and record failures, they never block the push)."""
    url, work = repo_with_hooks(host, git, tmp_path / "w", Hook(receiver.url(), "github"))
    receiver.gate.clear()
    pushed = push_change(git, work, b"replicas: 12\n")
    assert git.ls_remote(url)["refs/heads/main"] == pushed
    assert host.deliveries("demo") == []
    receiver.gate.set()
    assert host.wait_for_deliveries(1, 10, repo="demo")[0].status == 200


def test_host_keeps_working_when_the_hook_refuses_connections(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """A refused connection is recorded as an error (no status) and pushes keep working; an
    error status from a receiver is recorded as that status."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/hook"
    hooks = [Hook(dead, "github"), Hook(receiver.url("/status/500"), "gitlab")]
    url, work = repo_with_hooks(host, git, tmp_path / "w", *hooks)
    push_change(git, work, b"replicas: 13\n")
    second = push_change(git, work, b"replicas: 14\n")
    assert git.ls_remote(url)["refs/heads/main"] == second
    recorded = host.wait_for_deliveries(4, 10, repo="demo")
    refused = [d for d in recorded if d.hook.provider == "github"]
    assert all(d.status is None and d.error and "refused" in d.error for d in refused)
    assert [d.status for d in recorded if d.hook.provider == "gitlab"] == [500, 500]
