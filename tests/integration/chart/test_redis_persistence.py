"""The built-in Redis as the chart configures it survives a kill -9 with every acknowledged
write (docs/architecture.md "Redis persistence"; M8: an event is acknowledged only after the
push that holds it).

A redis-server runs with the rendered ``redis.conf``, the password file its init container
writes, and the StatefulSet's command (only ``dir``, ``port`` and the files' paths are
local). An edit is published (Redis acknowledged the event), the
watcher is stopped so nothing can publish it again, and Redis is killed while the branch's
commit window is open. After a restart the branch worker claims the event and pushes it.
Without AOF the event would be gone and, with no watcher to list again, never reach Git.
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kubernetes import client

from sandbox.githost.outside import git
from sandbox.processes import free_port
from services.redis_auth.__main__ import write_config
from shared.model.ids import Branch
from shared.store.keys import Keys
from tests.helpers import wait_until
from tests.integration.chart.render import RELEASE, render
from tests.integration.chart.test_chart_runs import TENANT, chart_running, chart_values, tenant

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
PASSWORD = "chart-redis-password-0123"
CONF, AUTH = "/etc/redis/redis.conf", "/run/redis-auth/auth.conf"
WAIT_S = 90.0
#: How long a started redis-server may take to load its AOF and answer.
START_S = 30.0


class ChartRedis:
    """redis-server started exactly as the chart's StatefulSet starts it."""

    def __init__(self, directory: Path) -> None:
        rendered = render()
        name = f"{RELEASE}-gitops-reverser-redis"
        conf = rendered.one("ConfigMap", name)["data"]["redis.conf"]
        container = rendered.one("StatefulSet", name)["spec"]["template"]["spec"]["containers"][0]
        self.port = free_port()
        data = directory / "data"
        data.mkdir(parents=True)
        auth = self.auth = directory / "auth.conf"
        write_config(auth, PASSWORD)
        local = [
            f"dir {data}" if line.startswith("dir ") else line.replace(AUTH, str(auth))
            for line in conf.splitlines()
            if not line.startswith("port ")
        ]
        self.conf = directory / "redis.conf"
        self.conf.write_text("\n".join([*local, f"port {self.port}", "bind 127.0.0.1", ""]))
        assert "args" not in container and "env" not in container
        self.command = [part.replace(CONF, str(self.conf)) for part in container["command"]]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:{PASSWORD}@127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL)
        probe = redis.Redis.from_url(self.url, socket_connect_timeout=0.2)
        deadline = time.monotonic() + START_S
        while True:
            try:
                if probe.ping():
                    return
            except (redis.ConnectionError, redis.BusyLoadingError):
                # redis-server has no readiness signal but answering
                assert time.monotonic() < deadline and self.process.poll() is None
                time.sleep(0.1)

    def command_line(self) -> bytes:
        """What ``ps`` shows of the server (``sh -c`` execs it: the same process)."""
        assert self.process is not None
        return Path(f"/proc/{self.process.pid}/cmdline").read_bytes()

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def test_the_password_is_in_no_command_line(chart_redis: ChartRedis) -> None:
    """Issue 24 §8: Redis answers only with the password, which is in its config file, not
    in its arguments or environment (``ps`` and /proc show none)."""
    assert b"redis-server" in chart_redis.command_line() or b"valkey" in chart_redis.command_line()
    assert PASSWORD.encode() not in chart_redis.command_line()
    assert chart_redis.process is not None
    environ = Path(f"/proc/{chart_redis.process.pid}/environ").read_bytes()
    assert PASSWORD.encode() not in environ
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=chart_redis.port, password="wrong").ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=chart_redis.port).ping()
    assert redis.Redis.from_url(chart_redis.url).ping()


def test_the_readiness_probe_authenticates_from_the_file(
    chart_redis: ChartRedis, tmp_path: Path
) -> None:
    """The probe reads the password from the included file into the client's environment (no
    argument holds it) and passes; with another password in the file it fails."""
    rendered = render().one("StatefulSet", f"{RELEASE}-gitops-reverser-redis")
    probe = rendered["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["exec"]
    assert PASSWORD not in " ".join(probe["command"])

    def run(auth: Path) -> int:
        local = [
            part.replace(AUTH, str(auth)).replace(" ping", f" -p {chart_redis.port} ping")
            for part in probe["command"]
        ]
        return subprocess.run(local, check=False, capture_output=True).returncode

    assert run(chart_redis.auth) == 0
    wrong = tmp_path / "wrong.conf"
    write_config(wrong, "not-the-password-0123")
    assert run(wrong) != 0


@pytest.fixture
def chart_redis(tmp_path: Path) -> Iterator[ChartRedis]:
    server = ChartRedis(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            server.kill()


def test_the_chart_redis_keeps_an_unpushed_edit_through_a_kill(
    chart_redis: ChartRedis, tmp_path: Path
) -> None:
    """M8/O4: kill -9 of the chart's Redis mid-window loses no acknowledged edit."""
    values = chart_values(f"test:chart:{uuid.uuid4().hex[:8]}")
    values["redis"]["url"] = chart_redis.url
    conf = chart_redis.conf.read_text().splitlines()
    assert "appendfsync always" in conf and "appendonly yes" in conf
    with chart_running(tmp_path / "run", render(values)) as run:
        tenant(run, commit_window="20s")
        run.start("watcher")
        run.start("branch-worker")
        repo = run.githost.repo_path(TENANT)
        base = git("rev-parse", "main", cwd=repo)
        store = redis.Redis.from_url(chart_redis.url)
        keys = Keys(values["keyPrefix"])
        events = keys.branch_events(Branch(run.githost.repo_url(TENANT), "main").key)
        wait_until(lambda: store.exists(keys.branches) == 1, WAIT_S, "the branch published")
        client.CoreV1Api(run.api).create_namespaced_config_map(
            TENANT, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="kept"), data={"a": "1"})
        )

        def published() -> bool:
            return any(b"kept" in str(fields).encode() for _, fields in store.xrange(events))

        wait_until(published, WAIT_S, "the edit's event in Redis")
        run.procs["watcher"].send_signal(signal.SIGTERM)
        run.procs["watcher"].wait(timeout=30)
        assert git("rev-parse", "main", cwd=repo) == base, "pushed before the kill"
        chart_redis.kill()
        chart_redis.start()
        assert published(), "the acknowledged event did not survive the kill"
        wait_until(lambda: git("rev-parse", "main", cwd=repo) != base, WAIT_S, "the edit pushed")
        files = git("ls-tree", "-r", "--name-only", "main", cwd=repo).split()
        assert any(f.endswith("kept.yaml") for f in files), files
