"""The install's Redis URL and key prefix are found in the cluster, as the chart put them there.

The chart is rendered by Helm (tests/integration/chart/render.py) and its settings ConfigMap,
Redis Secret and watcher Deployment are created in the API double as ``helm install`` would;
the CLI then reads the test's Redis through them with no ``--redis-url``/``--key-prefix``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import redis
from kubernetes.dynamic import DynamicClient

from services.branch_worker.inspect import report
from services.cli.errors import EXIT_NOT_FOUND, EXIT_OK
from services.cli.install import find_install, with_address
from shared.kube.userconfig import user_cluster
from shared.settings import Settings
from tests.integration.chart.render import NAMESPACE, Rendered, render
from tests.integration.cli.harness import Api, Cli
from tests.integration.cli.redis_state import publish_target, stores

FULLNAME = "gr-gitops-reverser"


def install(api: Api, tmp_path: Path, rendered: Rendered) -> None:
    """Create what the CLI reads of a rendered chart: the namespace, the settings ConfigMap,
    the Secrets the chart renders and the watcher Deployment."""
    dynamic = DynamicClient(api.api, cache_file=str(tmp_path / "discovery.json"))
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    wanted: list[dict[str, Any]] = [
        rendered.one("ConfigMap", f"{FULLNAME}-settings"),
        rendered.deployment("watcher"),
        *rendered.of_kind("Secret"),
    ]
    for obj in wanted:
        res = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        res.create(body=obj, namespace=NAMESPACE)


def test_an_external_redis_url_and_prefix_are_read_from_the_chart_objects(
    api: Api, tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    url = Settings.from_env().redis_url
    install(
        api, tmp_path, render({"redis": {"builtin": False, "url": url}, "keyPrefix": key_prefix})
    )
    s = stores(redis_client, key_prefix)
    publish_target(s, "uid-1", "apps")
    done = Cli(tmp_path / "kubeconfig")("inspect")
    assert done.code == EXIT_OK, done
    assert done.out.strip() == report(s)
    assert "http://git.example/team/config main" in done.out


def test_the_builtin_redis_url_is_built_from_its_password_secret(api: Api, tmp_path: Path) -> None:
    install(api, tmp_path, render({"keyPrefix": "gr:v1"}))
    # The built-in Redis's password Secret is made in the cluster, never rendered (redis.yaml)
    password = base64.b64encode(b"s3cret-password-1").decode()
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{FULLNAME}-redis", "namespace": NAMESPACE},
            "data": {"password": password},
        }
    )
    found = find_install(user_cluster(str(tmp_path / "kubeconfig")).client)
    host = f"{FULLNAME}-redis.{NAMESPACE}.svc:6379"
    assert (found.namespace, found.fullname, found.key_prefix) == (NAMESPACE, FULLNAME, "gr:v1")
    assert found.redis_url == f"redis://:s3cret-password-1@{host}/0"
    forwarded = with_address(found.redis_url, "127.0.0.1:16379")
    assert forwarded == "redis://:s3cret-password-1@127.0.0.1:16379/0"


def test_no_install_is_not_found_with_what_to_pass(api: Api, tmp_path: Path) -> None:
    done = Cli(tmp_path / "kubeconfig")("inspect")
    assert done.code == EXIT_NOT_FOUND
    assert "no gitops-reverser install in any namespace" in done.err
    assert "pass --redis-url and --key-prefix" in done.err
