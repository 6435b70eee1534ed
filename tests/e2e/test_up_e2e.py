"""``make up`` runs everything until Ctrl-C and then stops cleanly (issue 13 part 4).

The script behind ``make up`` (``python -m sandbox local``) is started as a terminal starts it,
in a process group of its own and without ``GITOPS_REVERSER_REDIS_URL`` (so it starts its own
Redis). Once it prints its ready line, an API edit made as the printed ``kubectl`` command makes
it is mirrored to the printed repository; then SIGINT goes to the whole group, as Ctrl-C does,
and every process stops with status 0, the script exits 0, and nothing printed a traceback.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

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


def test_make_up_mirrors_an_edit_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    directory = tmp_path / "up"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    # The dashboard is skipped: its fixed port may be another run's.
    command = ["local", "--dir", str(directory), "--skip", "dashboard"]
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", *command],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(process)
    try:
        assert output.ready.wait(READY_S) and process.poll() is None, "".join(output.lines)
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
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the group
        code = process.wait(STOP_S)
    text = output.text()
    assert code == 0, text
    assert "Traceback" not in text
    assert "up | stopped cleanly" in text
    for name in PRODUCT:
        assert re.search(rf"\| {name} stopped \(rc=0\)$", text, re.MULTILINE), text
