"""Verified deliveries per second through the receiver, beside a bare Flask endpoint.

Both apps run under gunicorn with the same config file (``services/receiver/gunicorn.conf.py``:
the receiver's worker class, the same workers and threads), side by side in one run, and get the
same load: a real-looking signed GitHub push (JSON) posted over keep-alive connections on
loopback, each with its own delivery id. The bare endpoint reads the body and answers 202; the
receiver looks its receiver record up in Redis, reads the token (through shared.kube from the
sandbox Kubernetes API, cached), verifies the HMAC, parses the JSON and stores one notice with
its replay guard (one Lua call). Throughput is measured closed-loop (every connection sends its
next request when the answer arrives), best of ROUNDS rounds each; latency is then measured
open-loop in a Git host's shape, FRESH_RATE deliveries a second each on a new connection, from
each request's scheduled send time, for the receiver and, at the same rate, for both bare
endpoints (the floor: on a busy machine the load generator's own jitter is in every number;
``bench.openloop`` sends it). The CPU each app's
workers and Redis spend per request is recorded too: on a 2-core machine it is what the
throughput ratio comes down to, and a busy machine disturbs it far less. Bounded: a fixed number
of requests per round and a time cap.
Run alone: ``scripts/with-redis .venv/bin/python -m bench receiver``.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flask import Flask, Response, jsonify, request
from kubernetes import client as k8s

from bench import openloop
from bench.report import Section, percentile
from sandbox.kube.server import KubeApiServer
from shared.model.receivers import ReceiverRecord, webhook_digest, webhook_path
from shared.settings import Settings
from shared.store.connection import connect
from shared.store.keys import Keys
from shared.store.receivers import ReceiverDirectory, receiver_client

ROOT = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).parent / "gunicorn"
#: Requests per throughput round, and the cap on a round's duration (whichever comes first).
ROUND_REQUESTS = 2000
ROUND_SECONDS = 5.0
#: Short rounds, the apps taking turns: a burst of load from something else on the machine
#: then hits one round of each app rather than the whole of one app's measurement.
ROUNDS = 5
#: Concurrent keep-alive connections of the closed-loop load.
CONNECTIONS = 16
#: The open-loop latency runs: a Git host's shape, a few deliveries a second at most in real
#: use, each on a new connection; FRESH_RATE a second is well above it. Each app gets
#: LATENCY_ROUNDS runs of FRESH_REQUESTS, the apps taking turns.
FRESH_RATE = 100.0
FRESH_REQUESTS = 500
LATENCY_ROUNDS = 3
START_TIMEOUT_S = 20.0
TOKEN = b"bench token"
LISTENING = re.compile(r"Listening at: (http://[0-9.]+:\d+)")


def bare_app(redis_round_trip: bool = False) -> Flask:
    """The baseline: a Flask endpoint that reads the body and answers 202 JSON, nothing else.

    With ``redis_round_trip`` it also sends Redis one PING per request: the floor of any
    design that stores something before it answers, as R4 requires. The PING goes through
    the receiver's own client settings (``receiver_client``: timeouts, one retry), as redis-py
    is ordinarily used: ``client.ping()``, through the pool.
    """
    app = Flask(__name__)
    client = receiver_client(Settings.from_env().redis_url) if redis_round_trip else None

    @app.post("/hook/<digest>")
    def hook(digest: str) -> Response:
        request.get_data()
        if client is not None:
            client.ping()
        response = jsonify({"status": "accepted", "reason": "bare"})
        response.status_code = 202
        return response

    return app


@dataclass
class Server:
    """One gunicorn process and its base URL."""

    process: subprocess.Popen[str]
    url: str

    def cpu_seconds(self) -> float:
        """CPU (user + system) used so far by gunicorn's workers (the master's children)."""
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # the process is gone
                continue
            if int(fields[1]) == self.process.pid:  # its parent
                total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=35)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start(app_spec: str, env: dict[str, str], log: Path) -> Server:
    """``gunicorn -c services/receiver/gunicorn.conf.py APP`` on a port it picks itself.

    Its output goes to a file, not a pipe: reading a pipe would take CPU from the load
    generator in this process for every log line, and the receiver logs each delivery.
    """
    command = [str(GUNICORN), "-c", "services/receiver/gunicorn.conf.py", app_spec]
    with log.open("w") as sink:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stderr=sink, stdout=subprocess.DEVNULL, text=True
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        match = LISTENING.search(log.read_text())
        if match:
            return Server(process, match.group(1))
        time.sleep(0.05)  # nothing to block on: gunicorn writes the line when it has bound
    process.kill()
    raise RuntimeError(f"{app_spec} did not start:\n{log.read_text()}")


def delivery(repo_url: str) -> tuple[bytes, dict[str, str]]:
    """A GitHub push delivery with one commit (about 2 KiB), signed with TOKEN."""
    sha = hashlib.sha1(b"bench").hexdigest()
    commit = {
        "id": sha,
        "message": "scale up",
        "timestamp": "2026-11-29T10:00:00Z",
        "author": {"name": "Bench", "email": "b@x.invalid"},
        "committer": {"name": "Bench", "email": "b@x.invalid"},
        "added": [],
        "removed": [],
        "modified": ["apps/app.yaml"],
    }
    payload = {
        "ref": "refs/heads/main",
        "before": "0" * 39 + "1",
        "after": sha,
        "created": False,
        "deleted": False,
        "forced": False,
        "compare": repo_url,
        "commits": [commit],
        "head_commit": commit,
        "repository": {
            "id": 1,
            "full_name": "bench/apps",
            "clone_url": repo_url,
            "html_url": repo_url.removesuffix(".git"),
            "private": False,
        },
        "pusher": {"name": "bench", "email": "b@x.invalid"},
        "sender": {"login": "bench"},
    }
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(TOKEN, body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-Hub-Signature-256": signature,
        "User-Agent": "GitHub-Hookshot/bench",
    }
    return body, headers


@dataclass(frozen=True, slots=True)
class Timing:
    """One open-loop request: its latency from the scheduled send time, and how late the load
    generator itself was in sending it (its own jitter, which the latency includes)."""

    latency: float
    lateness: float


class Load:
    """Posts the delivery to one URL path over keep-alive connections; counts the answers."""

    def __init__(self, base_url: str, path: str, body: bytes, headers: dict[str, str]) -> None:
        host, _, port = base_url.removeprefix("http://").partition(":")
        self._address = (host, int(port))
        self._path, self._body, self._headers = path, body, headers
        self.failures: list[int] = []
        self.reconnected = 0  # open loop: answers that closed their connection
        self._lock = threading.Lock()

    def _post(self, connection: http.client.HTTPConnection) -> None:
        headers = {**self._headers, "X-GitHub-Delivery": str(uuid.uuid4())}
        connection.request("POST", self._path, body=self._body, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status != 202:
            with self._lock:
                self.failures.append(response.status)

    def _worker(self, more: Callable[[], bool]) -> None:
        connection = http.client.HTTPConnection(*self._address, timeout=30)
        try:
            while more():
                self._post(connection)
        finally:
            connection.close()

    def saturate(self, count: int, seconds: float) -> tuple[float, int]:
        """Closed loop with CONNECTIONS connections: answered requests per second, and how
        many were sent."""
        lock, sent = threading.Lock(), [0]
        deadline = time.perf_counter() + seconds

        def more() -> bool:
            with lock:
                if sent[0] >= count or time.perf_counter() > deadline:
                    return False
                sent[0] += 1
                return True

        started = time.perf_counter()
        workers = [threading.Thread(target=self._worker, args=(more,)) for _ in range(CONNECTIONS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return sent[0] / (time.perf_counter() - started), sent[0]

    def paced(self, rate: float, count: int) -> list[Timing]:
        """Open loop at ``rate`` requests/s, each on a new connection, each request timed from
        its scheduled send time (so a slow answer delays no later request's clock: no
        coordinated omission; the connecting is in the latency). Sent by ``bench.openloop``:
        one thread in a process of its own, so no thread of this process shares its GIL."""
        head, tail = openloop.prepared(self._path, self._body, self._headers, "X-GitHub-Delivery")
        paced = openloop.run_apart(
            openloop.Plan(self._address, head, tail, rate, count, 0, fresh=True)
        )
        with self._lock:
            self.failures += paced.failures
            self.reconnected += paced.reconnected
        return [Timing(latency, lateness) for latency, lateness in paced.timings]


def _environment(scratch: Path, kubeconfig: Path, prefix: str) -> dict[str, str]:
    settings = Settings.from_env()
    (scratch / "prom").mkdir()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "PROMETHEUS_MULTIPROC_DIR": str(scratch / "prom"),
        "GITOPS_REVERSER_REDIS_URL": settings.redis_url,
        "GITOPS_REVERSER_KEY_PREFIX": prefix,
        "GITOPS_REVERSER_KUBECONFIG": str(kubeconfig),
        "GITOPS_REVERSER_RECEIVER_BIND": "127.0.0.1:0",
        "GITOPS_REVERSER_RECEIVER_WORKERS": str(settings.receiver_workers),
        "GITOPS_REVERSER_RECEIVER_THREADS": str(settings.receiver_threads),
    }


def _publish(kube: KubeApiServer, prefix: str, repo_url: str) -> str:
    core = k8s.CoreV1Api(kube.api_client())
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="bench")))
    core.create_namespaced_secret(
        "bench",
        k8s.V1Secret(metadata=k8s.V1ObjectMeta(name="hook"), string_data={"token": TOKEN.decode()}),
    )
    record = ReceiverRecord("bench", "gp", "github", "hook", repo_url, ("main",))
    client = connect(Settings.from_env().redis_url, client_name="bench")
    ReceiverDirectory(client, Keys(prefix)).publish(webhook_digest(TOKEN, "gp", "bench"), record)
    client.close()
    return webhook_path(TOKEN, "gp", "bench")


#: The apps measured side by side: gunicorn app specs, by what the page calls them.
APPS = {
    "receiver": "services.receiver.app:create_app()",
    "bare": "bench.receiver:bare_app()",
    "bare+PING": "bench.receiver:bare_app(redis_round_trip=True)",
}


@dataclass
class Measured:
    """Throughput of each app, and open-loop timings of each at the same rate."""

    rates: dict[str, float]
    timings: dict[str, list[Timing]]
    #: CPU seconds per answered request over the throughput rounds: gunicorn's workers, Redis
    cpu: dict[str, tuple[float, float]]
    #: The same in the open-loop runs: gunicorn's workers' CPU seconds per request
    paced_cpu: dict[str, float]


def _redis_cpu() -> float:
    """CPU seconds Redis has used (``INFO cpu``: its main thread and the rest)."""
    client = connect(Settings.from_env().redis_url, client_name="bench")
    try:
        info = client.info("cpu")
    finally:
        client.close()
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _measure(loads: dict[str, Load], servers: dict[str, Server]) -> Measured:
    """Best-of-ROUNDS throughput of each app, and the CPU its workers and Redis spent per
    request over those rounds; then every app at FRESH_RATE on new connections, in rounds
    that take turns too, so the bare endpoints' latency is the floor beside ours."""
    rates = dict.fromkeys(loads, 0.0)
    used = {name: [0.0, 0.0, 0] for name in loads}  # worker CPU, Redis CPU, requests
    for load in loads.values():
        load.saturate(300, ROUND_SECONDS)  # warm up: connections, caches, the Lua script
    for _ in range(ROUNDS):
        for name, load in loads.items():
            workers, redis_cpu = servers[name].cpu_seconds(), _redis_cpu()
            rate, answered = load.saturate(ROUND_REQUESTS, ROUND_SECONDS)
            rates[name] = max(rates[name], rate)
            used[name][0] += servers[name].cpu_seconds() - workers
            used[name][1] += _redis_cpu() - redis_cpu
            used[name][2] += answered
    cpu = {name: (w / max(n, 1), r / max(n, 1)) for name, (w, r, n) in used.items()}
    timings: dict[str, list[Timing]] = {name: [] for name in loads}
    paced = {name: [0.0, 0] for name in loads}  # worker CPU, requests
    for _ in range(LATENCY_ROUNDS):
        for name, load in loads.items():
            before = servers[name].cpu_seconds()
            got = load.paced(FRESH_RATE, FRESH_REQUESTS)
            paced[name][0] += servers[name].cpu_seconds() - before
            paced[name][1] += len(got)
            timings[name] += got
    paced_cpu = {name: w / max(n, 1) for name, (w, n) in paced.items()}
    return Measured(rates, timings, cpu, paced_cpu)


def _cleanup(prefix: str) -> None:
    client = connect(Settings.from_env().redis_url, client_name="bench")
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()


def _run(root: Path, kube: KubeApiServer, prefix: str) -> tuple[Measured, int]:
    repo_url = "https://git.example.com/bench/apps.git"
    kube.write_kubeconfig(root / "kubeconfig")
    path = _publish(kube, prefix, repo_url)
    body, headers = delivery(repo_url)
    servers: dict[str, Server] = {}
    try:
        for i, (name, spec) in enumerate(APPS.items()):
            (root / str(i)).mkdir()
            env = _environment(root / str(i), root / "kubeconfig", prefix)
            servers[name] = start(spec, env, root / f"{i}.log")
        loads = {name: Load(server.url, path, body, headers) for name, server in servers.items()}
        measured = _measure(loads, servers)
    finally:
        for server in servers.values():
            server.stop()
    failures = {name: load.failures[:5] for name, load in loads.items() if load.failures}
    if failures:
        raise RuntimeError(f"answers other than 202: {failures}")
    return measured, len(body)


def _cpu_rows(section: Section, measured: Measured) -> None:
    """CPU per request of each app (its gunicorn workers, and Redis), over the throughput
    rounds: what throughput costs, which a busy machine disturbs far less than requests/s."""
    for name, (workers, redis_cpu) in measured.cpu.items():
        section.add(
            f"CPU per request, {APP_NAMES[name]}",
            (workers + redis_cpu) * 1e6,
            "us",
            f"gunicorn workers {workers * 1e6:.0f} us + Redis {redis_cpu * 1e6:.0f} us",
        )
    ours, floor = (sum(measured.cpu[name]) for name in ("receiver", "bare+PING"))
    section.add(
        "CPU ratio (bare + PING / receiver)",
        floor / ours,
        "",
        "requests per CPU second, ours against the floor's; goal as above",
    )


#: How the latency rows name the floors.
FLOOR_NAMES = {"bare+PING": "bare endpoint + PING", "bare": "bare endpoint"}
#: How the rows name every app.
APP_NAMES = {"receiver": "receiver", **FLOOR_NAMES}


def _latency_rows(section: Section, measured: Measured) -> None:
    """p50/p99 of the receiver at FRESH_RATE on new connections, the floors beside it."""
    ours = [t.latency for t in measured.timings["receiver"]]
    shape = f"{FRESH_RATE:.0f} deliveries/s, each on a new connection"
    section.add(
        f"{shape}, p50",
        percentile(ours, 50) * 1000,
        "ms",
        f"{len(ours)} requests, open loop, the connecting included",
    )
    section.add(f"{shape}, p99", percentile(ours, 99) * 1000, "ms", "goal: under 20 ms")
    for name in ("bare+PING", "bare"):
        floor = [t.latency for t in measured.timings[name]]
        section.add(
            f"{FLOOR_NAMES[name]} at the same rate and shape, p99",
            percentile(floor, 99) * 1000,
            "ms",
            f"p50 {percentile(floor, 50) * 1000:.1f} ms; the floor the p99 goal is judged against",
        )
    for name in ("receiver", "bare+PING"):
        closed = measured.cpu[name][0]
        section.add(
            f"CPU per request on new connections, {APP_NAMES[name]}",
            measured.paced_cpu[name] * 1e6,
            "us",
            f"gunicorn workers; {closed * 1e6:.0f} us in the throughput rounds (kept-alive)",
        )
    late = [t.lateness for ts in measured.timings.values() for t in ts]
    section.add(
        "load generator's own lateness in sending, p99",
        percentile(late, 99) * 1000,
        "ms",
        "included in every latency above (the clock starts at the scheduled time)",
    )


def bench() -> Section:
    """The three apps under the same gunicorn settings, the same load, one run."""
    section = Section(
        "Receiver: verified deliveries beside a bare Flask endpoint",
        "make bench  (python -m bench receiver)",
    )
    prefix = f"bench:{uuid.uuid4().hex[:8]}"
    load_before = os.getloadavg()[0]
    kube = KubeApiServer()
    kube.start()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            measured, size = _run(Path(scratch), kube, prefix)
    finally:
        kube.stop()
        _cleanup(prefix)
    load_after = os.getloadavg()[0]
    rates = measured.rates
    ours, bare, floor = rates["receiver"], rates["bare"], rates["bare+PING"]
    settings = Settings.from_env()
    section.add(
        "receiver, verified deliveries stored",
        ours,
        "deliveries/s",
        f"{CONNECTIONS} keep-alive connections, {size} B signed GitHub push",
    )
    section.add("bare Flask endpoint, same gunicorn settings", bare, "requests/s")
    section.add("ratio (receiver / bare)", ours / bare, "", "goal: at least 0.85")
    section.add(
        "bare endpoint + one Redis PING per request",
        floor,
        "requests/s",
        "the floor of storing before answering (R4)",
    )
    section.add("ratio (receiver / bare + PING)", ours / floor, "", "goal: at least 0.95")
    _cpu_rows(section, measured)
    _latency_rows(section, measured)
    section.notes.append(
        f"The receiver's gunicorn worker (services/receiver/worker.py: stock gthread with "
        "read and write deadlines and idle connections in the poller), "
        f"{settings.receiver_workers} workers x {settings.receiver_threads} threads, for every "
        "app; the load generator, the servers, Redis "
        f"and the Kubernetes API double share this machine's {os.cpu_count()} cores. "
        f"Throughput is the best of {ROUNDS} rounds of up to {ROUND_REQUESTS} requests "
        f"(or {ROUND_SECONDS:.0f} s) each over {CONNECTIONS} kept-alive connections, "
        "the apps taking turns; CPU per request is what the app's gunicorn workers and Redis "
        "used over those rounds (/proc and INFO cpu), divided by the requests sent: a busy "
        "machine slows every process, but disturbs what a request costs far less than how "
        "many get through. Latency is measured open loop in a Git host's shape: "
        f"{FRESH_RATE:.0f} deliveries a second, each on a new connection that the client "
        f"closes after the answer, {LATENCY_ROUNDS} rounds of {FRESH_REQUESTS} per app taking "
        "turns, each request timed from its scheduled send time (the connecting included), "
        "sent by one thread in a process of its own (bench/openloop.py); the generator's own "
        "lateness (a process waking late on a busy machine) is in every latency, which is why "
        "the floors are shown beside ours. "
        f"Load average (1 min) {load_before:.1f} before and {load_after:.1f} after the run: "
        "other work on the machine shows in these numbers. "
        "Each stored delivery costs the receiver one Redis round trip (the notice and its "
        "replay guard in one Lua call, the notices passed as one JSON argument); receiver "
        "records, tokens, stream keys and parsed repository URLs come from small caches. "
        "The receiver answers its hook route in a WSGI layer in front of Flask "
        "(services/receiver/hook.py), while both floors pay Flask's request context, URL "
        "matching and Request/Response objects on every request (taking them off the "
        "receiver's route saved a third of its in-process instructions, 1.05 M to 0.71 M a "
        "delivery, callgrind): the floor is the one issue 9 names, a bare Flask "
        "endpoint, not the cheapest server one could write, and the ratio is read with that "
        "in mind."
    )
    return section
