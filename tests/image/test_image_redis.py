"""The chart's built-in Redis runs the product image (issue 24 item 8: the chart names no public
image of someone else's, so one digest pins every container).

The StatefulSet's Redis container is started from the image exactly as the chart renders it:
its command, its securityContext's uid with a read-only root and no capability, the rendered
``redis.conf`` and a password file as the init container writes it. Its readiness probe must
pass, an acknowledged write must be in the append-only file, and the password must be on no
command line.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from services.redis_auth.__main__ import write_config
from tests.helpers import wait_until
from tests.image.conftest import podman
from tests.integration.chart.render import RELEASE, render

pytestmark = pytest.mark.image

PASSWORD = "image-redis-password-0123"
#: How long the container may take to start and load its (empty) append-only file.
START_S = 60.0


def _chart_redis() -> tuple[str, dict[str, object]]:
    rendered = render()
    name = f"{RELEASE}-gitops-reverser-redis"
    conf: str = rendered.one("ConfigMap", name)["data"]["redis.conf"]
    container: dict[str, object] = rendered.one("StatefulSet", name)["spec"]["template"]["spec"][
        "containers"
    ][0]
    return conf, container


def test_the_built_in_redis_runs_from_the_product_image_as_the_chart_starts_it(
    image: str, containers: list[str], tmp_path: Path
) -> None:
    conf, container = _chart_redis()
    security = container["securityContext"]
    assert isinstance(security, dict)
    assert security["readOnlyRootFilesystem"] is True
    user = f"{security['runAsUser']}:{security['runAsGroup']}"
    folders = {name: tmp_path / name for name in ("config", "auth", "data")}
    for folder in folders.values():
        folder.mkdir()
        folder.chmod(0o777)  # the pod's fsGroup makes its volumes writable by the Redis user
    (folders["config"] / "redis.conf").write_text(conf)
    write_config(folders["auth"] / "auth.conf", PASSWORD)
    (folders["auth"] / "auth.conf").chmod(0o644)
    name = f"gr-redis-{uuid.uuid4().hex[:8]}"
    containers.append(name)
    command = container["command"]
    assert isinstance(command, list)
    podman(
        "run", "-d", "--name", name, "--network=none", "--read-only", "--cap-drop=ALL",
        "--security-opt=no-new-privileges", f"--user={user}",
        "-v", f"{folders['config']}:/etc/redis:ro",
        "-v", f"{folders['auth']}:/run/redis-auth:ro",
        "-v", f"{folders['data']}:/data",
        "--entrypoint", command[0], image, *command[1:],
    )  # fmt: skip
    probe = container["readinessProbe"]
    assert isinstance(probe, dict)

    def ready() -> bool:
        state = podman("inspect", "--format", "{{.State.Running}}", name, check=False)
        assert state.stdout.strip() != "false", podman("logs", name, check=False).stderr
        return podman("exec", name, *probe["exec"]["command"], check=False).returncode == 0

    wait_until(ready, START_S, "the chart's readiness probe to pass")
    said = podman(
        "exec", "-e", f"REDISCLI_AUTH={PASSWORD}", name, "redis-cli", "set", "edit", "kept"
    )
    assert said.stdout.strip() == "OK"
    refused = podman("exec", name, "redis-cli", "get", "edit", check=False)
    assert "NOAUTH" in refused.stdout + refused.stderr
    appended = b"".join(
        path.read_bytes() for path in folders["data"].rglob("*.aof") if path.is_file()
    )
    assert b"kept" in appended, sorted(str(p) for p in folders["data"].rglob("*"))
    command_lines = podman("exec", name, "sh", "-c", "cat /proc/[0-9]*/cmdline").stdout
    assert "redis-server" in command_lines
    assert PASSWORD not in command_lines
