"""``make up`` runs everything until Ctrl-C and then stops cleanly (issue 13 part 4).

The script behind ``make up`` (``python -m sandbox local``) is started as a terminal starts it,
in a process group of its own and without ``GITOPS_REVERSER_REDIS_URL`` (so it starts its own
Redis). Once it prints its ready line, an API edit made as the printed ``kubectl`` command makes
it is mirrored to the printed repository; then SIGINT goes to the whole group, as Ctrl-C does,
and every process stops with status 0, the script exits 0, and nothing printed a traceback.

Issue 26.6: the dashboard gets a free port (it runs here, beside whatever else holds 9181),
and the ``gitops-reverser`` lines it prints run as printed, with this run's settings; after
Ctrl-C with its output read through a pipe, every process it started is gone.

Outside check 9: behind a pipe (``make up 2>&1 | tee log``), Ctrl-C stops ``tee`` first, and
the next line ``make up`` printed ended honcho's loop before it stopped anything. Here the
reader of the script's output goes away once everything is ready (as ``tee`` does), with and
without the SIGINT that follows, and every process the script started (Redis, honcho's
helpers, the product's processes) must be gone, the script exited, within a bounded wait.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from sandbox.githost.outside import git
from sandbox.local import PRODUCT, READY_LINE
from sandbox.paths import REPO_ROOT
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

#: Redis, the sandbox and four processes start in a few seconds; far more on a busy machine.
READY_S = 180.0
MIRROR_S = 60.0
STOP_S = 90.0


class Output:
    """The script's output, read on a thread; ``ready`` is set at its ready line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line)
            if line.startswith(READY_LINE):
                self.ready.set()
        self.ready.set()  # the script ended: stop waiting

    def text(self) -> str:
        self._thread.join(STOP_S)
        return "".join(self.lines)

    def find(self, pattern: str) -> str:
        found = re.search(pattern, "".join(self.lines), re.MULTILINE)
        assert found, f"no line matching {pattern!r} in:\n{''.join(self.lines)}"
        return found[1]


def make_up(
    directory: Path, dashboard: bool = False, extra: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    """``python -m sandbox local`` as a terminal starts it: a process group of its own, its
    own Redis, output (stderr too) to a pipe read here; the dashboard only if asked."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    command = ["local", "--dir", str(directory)]
    if not dashboard:
        command += ["--skip", "dashboard"]
    command += extra
    return subprocess.Popen(
        [sys.executable, "-m", "sandbox", *command],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _page(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as page:
            return int(page.status) == 200
    except OSError:
        return False


def _cli(line: str, *more: str) -> Any:
    """Run a ``gitops-reverser`` line as printed (plus ``more``); its JSON output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    done = subprocess.run(
        [*shlex.split(line), *more],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_make_up_mirrors_an_edit_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    process = make_up(tmp_path / "up", dashboard=True)
    output = Output(process)
    family: set[int] = set()
    try:
        assert output.ready.wait(READY_S) and process.poll() is None, "".join(output.lines)
        family = descendants(process.pid)
        dashboard = output.find(r"^up \| rq-dashboard: (http://127\.0\.0\.1:\d+/)$")
        wait_until(lambda: _page(dashboard), MIRROR_S, "the dashboard's page", poll=0.2)
        get_targets = output.find(r"^up \|   (\S+ --kubeconfig .+) get targets -n demo$")
        [row] = _cli(get_targets, "get", "targets", "-n", "demo", "-o", "json")["items"]
        assert row["name"] == "apps" and row["owed"] != "?"
        kubeconfig = output.find(r"kubectl --kubeconfig (\S+) create configmap")
        repo = output.find(r"git clone (\S+) ")
        before = git("ls-remote", repo, "refs/heads/main").split()[0]
        api = config.new_client_from_config(kubeconfig, "sandbox")
        body = client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="hello"), data={"greeting": "hi"}
        )
        client.CoreV1Api(api).create_namespaced_config_map("demo", body)
        wait_until(
            lambda: git("ls-remote", repo, "refs/heads/main").split()[0] != before,
            MIRROR_S,
            "the edit's commit",
            poll=0.2,
        )
        clone = tmp_path / "clone"
        git("clone", "--quiet", repo, str(clone), cwd=tmp_path)
        mirrored = (clone / "clusters/demo/demo/configmaps/hello.yaml").read_text()
        assert "greeting: hi" in mirrored
        trace = output.find(r"^up \|   (\S+ --kubeconfig .+) trace configmap/hello -n demo$")
        [target] = _cli(trace, "trace", "configmap/hello", "-n", "demo", "-o", "json")["gitTargets"]
        assert target["file"] == "clusters/demo/demo/configmaps/hello.yaml"
        assert target["lastCommit"]["sha"] == git("ls-remote", repo, "refs/heads/main").split()[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the group
        code = process.wait(STOP_S)
    wait_until(
        lambda: not any(running(pid) for pid in family),
        STOP_S,
        f"every process make up started to be gone: {sorted(filter(running, family))}",
        poll=0.2,
    )
    text = output.text()
    assert code == 0, text
    assert "Traceback" not in text
    assert "up | stopped cleanly" in text
    for name in PRODUCT:
        assert re.search(rf"\| {name} stopped \(rc=0\)$", text, re.MULTILINE), text


def test_make_up_with_attribution_authors_a_commit_by_the_user_who_edited(
    tmp_path: Path,
) -> None:
    """Issue 26.6: docs/attribution.md tried locally, no Python written: ``--attribution``
    (``make up ATTRIBUTION=1``) prints a kubeconfig per user, and alice's edit is committed
    with alice as its author (the audit event reached the receiver's route)."""
    process = make_up(tmp_path / "up", extra=("--attribution",))
    output = Output(process)
    try:
        assert output.ready.wait(READY_S) and process.poll() is None, "".join(output.lines)
        kubeconfig = output.find(r"as alice: kubectl --kubeconfig (\S+) create configmap by-alice")
        repo = output.find(r"git clone (\S+) ")
        before = git("ls-remote", repo, "refs/heads/main").split()[0]
        api = config.new_client_from_config(kubeconfig, "sandbox")
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="by-alice"), data={"a": "1"})
        client.CoreV1Api(api).create_namespaced_config_map("demo", body)
        wait_until(
            lambda: git("ls-remote", repo, "refs/heads/main").split()[0] != before,
            MIRROR_S,
            "alice's commit",
            poll=0.2,
        )
        clone = tmp_path / "clone"
        git("clone", "--quiet", repo, str(clone), cwd=tmp_path)
        path = "clusters/demo/demo/configmaps/by-alice.yaml"
        author = git("log", "-1", "--format=%an <%ae>", "--", path, cwd=clone)
        assert author == "alice <alice@noreply.cluster.local>"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        code = process.wait(STOP_S)
    assert code == 0, output.text()


def _parents() -> dict[int, int]:
    """Every process of the machine and its parent, from /proc."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # it ended while we looked
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        found[int(text.split(" ", 1)[0])] = int(text.rsplit(")", 1)[1].split()[1])
    return found


def descendants(pid: int) -> set[int]:
    """The processes started by ``pid``, by their children, and so on."""
    parents = _parents()
    family, grown = set(), {pid}
    while grown:
        family |= grown
        grown = {child for child, parent in parents.items() if parent in grown} - family
    return family - {pid}


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (an ended process not yet reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _until_ready(process: subprocess.Popen[str]) -> list[str]:
    """The script's lines up to its ready line; then nothing reads its output any more but
    the pipe, which the caller closes (the reader going away)."""
    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith(READY_LINE):
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(READY_S)
    assert not reader.is_alive() and lines and lines[-1].startswith(READY_LINE), "".join(lines)
    return lines


@pytest.mark.parametrize("ctrl_c", [True, False], ids=["ctrl-c", "reader-gone"])
def test_make_up_behind_a_pipe_stops_everything_when_its_reader_goes(
    tmp_path: Path, ctrl_c: bool
) -> None:
    """Issue 26.6: the dashboard gets a free port (it runs here, beside whatever else holds 9181),
    and the ``gitops-reverser`` lines it prints run as printed, with this run's settings; after
    Ctrl-C with its output read through a pipe, every process it started is gone.

    Outside check 9: ``make up 2>&1 | tee log``, then Ctrl-C (``tee`` ends first); or the
        reader just goes (``| head``, a closed terminal): every process the script started is
        gone."""
    process = make_up(tmp_path / "up")
    family: set[int] = set()
    try:
        lines = _until_ready(process)
        family = descendants(process.pid)
        started = {
            int(pid)
            for name, pid in re.findall(r"(\w+) started \(pid=(\d+)\)", "".join(lines))
            if name in PRODUCT
        }
        assert len(started) == len(PRODUCT) and started <= family, (started, family)
        assert process.stdout is not None
        process.stdout.close()  # the reader goes
        if ctrl_c:
            os.killpg(process.pid, signal.SIGINT)
        code = process.wait(STOP_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            for pid in descendants(process.pid) | family:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            process.wait(STOP_S)
    assert code == 0
    wait_until(
        lambda: not any(running(pid) for pid in family),
        STOP_S,
        f"every process make up started to be gone: {sorted(filter(running, family))}",
        poll=0.2,
    )
