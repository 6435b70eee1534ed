"""Throughput of the sandbox Kubernetes API double, through the official client.

Two numbers, each bounded in count and in time, loopback only:
- list requests per second of a namespace holding 100 ConfigMaps;
- watch events per second delivered through ``watch.Watch().stream`` (events written first,
  then replayed from a resourceVersion, so the figure is the server's streaming rate plus the
  client's decoding, not the writer's speed).

Run alone: ``python -m bench kube_api`` (or ``python -m bench.kube_api``).
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client, watch

from bench.report import Section, render
from sandbox.kube.server import KubeApiServer

CONFIGMAPS = 100
LIST_REQUESTS = 200
WATCH_EVENTS = 2000
TIME_LIMIT_SECONDS = 20.0


def _configmap(name: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels={"b": "1"}), data={"key": "value " * 8}
    )


def bench_list(core: client.CoreV1Api) -> float:
    """List requests per second over 100 ConfigMaps."""
    for i in range(CONFIGMAPS):
        core.create_namespaced_config_map("default", _configmap(f"cm-{i}"))
    deadline = time.monotonic() + TIME_LIMIT_SECONDS
    started, done = time.monotonic(), 0
    while done < LIST_REQUESTS and time.monotonic() < deadline:
        assert len(core.list_namespaced_config_map("default").items) == CONFIGMAPS
        done += 1
    return done / (time.monotonic() - started)


def bench_watch(core: client.CoreV1Api) -> float:
    """Watch events per second, replayed through the official client's stream."""
    listed = core.list_namespaced_config_map("default").metadata
    assert listed is not None
    start_rv = listed.resource_version
    for i in range(WATCH_EVENTS):
        core.patch_namespaced_config_map(f"cm-{i % CONFIGMAPS}", "default", {"data": {"n": str(i)}})
    started, seen = time.monotonic(), 0
    watch_class: Any = watch.Watch  # the client's watch module is untyped
    watcher = watch_class()
    stream = watcher.stream(
        core.list_namespaced_config_map,
        "default",
        resource_version=start_rv,
        timeout_seconds=int(TIME_LIMIT_SECONDS),
    )
    for _ in stream:
        seen += 1
        if seen == WATCH_EVENTS:
            break
    return seen / (time.monotonic() - started)


def bench() -> Section:
    """Start a server with history enough for the replay, and measure both numbers."""
    section = Section("Kubernetes API double (sandbox/kube)", "python -m bench kube_api")
    server = KubeApiServer(history=WATCH_EVENTS + CONFIGMAPS + 10)
    server.start()
    try:
        core = client.CoreV1Api(server.api_client())
        section.add(
            f"list of {CONFIGMAPS} ConfigMaps (CoreV1Api)",
            bench_list(core),
            "requests/s",
            f"{LIST_REQUESTS} requests, one client, keep-alive",
        )
        section.add(
            "watch events (watch.Watch().stream)",
            bench_watch(core),
            "events/s",
            f"{WATCH_EVENTS} MODIFIED events replayed from a resourceVersion",
        )
    finally:
        server.stop()
    return section


if __name__ == "__main__":
    print(render([bench()]))
