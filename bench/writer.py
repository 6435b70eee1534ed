"""The writer alone: an API edit of a Deployment whose file a person wrote, with comments,
beside the same edit of a file the product wrote (issue 14, P1).

No Redis, no network: each side is a work tree (a fresh git repository, never pushed) holding
one Deployment under the GitTarget's folder, and an edit is one ``apply_event`` of an UPDATE
that changes the container's image, as ``kubectl set image`` would. Three sides take turns,
one edit each per round (the first to go rotating):

- hand-written: a commented file of about a hundred lines, written by a person (block and
  inline comments, flow sequences, quoted strings, four-space indentation); the writer edits
  it in place (P1: ``shared.model.roundtrip``), keeping all of that;
- product-written: the same object in the file the writer rendered itself, which it knows by
  the digest it keeps and rewrites whole (the common case of a mirrored object);
- hand-written, plain writer: the hand-written file with the benchmarks' plain writer
  (``bench.plain.apply_plain``), which rewrites it whole and loses its comments: the cost of
  a write before issue 14.

Run alone: ``.venv/bin/python -m bench writer``.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.plain import apply_plain
from bench.report import Section, percentile
from services.branch_worker.folder import Folder
from services.branch_worker.writer import apply_event
from shared.git.workspace import Workspace
from shared.model.config import TargetConfig
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import GitTargetUid, ObjectId
from tests.configs import target_config

#: Edits of each side.
EDITS = 300
FOLDER = "apps"
#: Where the person put the Deployment (any name: objects are found by identity, M4).
HAND_PATH = f"{FOLDER}/web/deployment.yaml"

HAND_WRITTEN = """\
# The web front end of the shop.
# Owned by team blue (#blue-oncall); ask before changing the probes.
apiVersion: apps/v1
kind: Deployment
metadata:
    name: web
    namespace: shop
    labels:
        app.kubernetes.io/name: web
        app.kubernetes.io/part-of: shop   # the umbrella chart's name
        tier: "frontend"
    annotations:
        # read by the release dashboard
        shop.example.com/owner: "team-blue"
        shop.example.com/runbook: "https://runbooks.example.com/web"
spec:
    # three is enough outside the sales weeks
    replicas: 3
    revisionHistoryLimit: 5
    selector:
        matchLabels:
            app.kubernetes.io/name: web
    strategy:
        type: RollingUpdate
        rollingUpdate:
            maxSurge: 1          # one extra pod while rolling
            maxUnavailable: 0    # never below the replicas
    template:
        metadata:
            labels:
                app.kubernetes.io/name: web
                tier: "frontend"
            annotations:
                prometheus.io/scrape: "true"
                prometheus.io/port: "9102"
        spec:
            serviceAccountName: web
            # spread over zones: a zone outage keeps two thirds of the pods
            topologySpreadConstraints:
                - maxSkew: 1
                  topologyKey: topology.kubernetes.io/zone
                  whenUnsatisfiable: ScheduleAnyway
                  labelSelector:
                      matchLabels:
                          app.kubernetes.io/name: web
            securityContext:
                runAsNonRoot: true
                runAsUser: 10001
                fsGroup: 10001
            containers:
                - name: web
                  # bumped by the release pipeline; keep the tag, never "latest"
                  image: "registry.example.com/shop/web:1.0.0"
                  imagePullPolicy: IfNotPresent
                  args: ["--port=8080", "--metrics-port=9102", "--log-format=json"]
                  ports:
                      - name: http
                        containerPort: 8080
                      - name: metrics
                        containerPort: 9102
                  env:
                      - name: SHOP_API_URL
                        value: "http://api.shop.svc:8080"
                      - name: SHOP_CACHE_TTL
                        value: "30s"   # short: prices change during sales
                      - name: SHOP_FEATURES
                        value: "search,wishlist"
                  resources:
                      requests:
                          cpu: 250m
                          memory: 256Mi
                      limits:
                          memory: 512Mi   # no CPU limit, on purpose (throttling)
                  readinessProbe:
                      httpGet: {path: /ready, port: http}
                      periodSeconds: 5
                  livenessProbe:
                      httpGet: {path: /healthz, port: http}
                      initialDelaySeconds: 10
                      periodSeconds: 20
                      failureThreshold: 3
                  volumeMounts:
                      - name: config
                        mountPath: /etc/web
                        readOnly: true
                      - name: tmp
                        mountPath: /tmp
                # ships the access log to the collector
                - name: log-shipper
                  image: "registry.example.com/shared/shipper:2.4.1"
                  args: ["--input=/var/log/web", "--output=collector.logging.svc:24224"]
                  resources:
                      requests: {cpu: 20m, memory: 32Mi}
                      limits: {memory: 64Mi}
            volumes:
                - name: config
                  configMap:
                      name: web-config
                - name: tmp
                  emptyDir: {}
"""


def _body(i: int) -> dict[str, Any]:
    """The Deployment as the API serves it after the i-th image change."""
    body: dict[str, Any] = yaml.safe_load(HAND_WRITTEN)
    body["spec"]["template"]["spec"]["containers"][0]["image"] = (
        f"registry.example.com/shop/web:1.0.{i + 1}"
    )
    return body


def _event(uid: GitTargetUid, i: int) -> ObjectEvent:
    oid = ObjectId("apps", "v1", "deployments", "Deployment", "shop", "web")
    return ObjectEvent(
        GitTargetRef(uid, "shop", "gt"), "UPDATE", oid, "u", str(i), _body(i), (), time.time()
    )


class _Side:
    """One work tree, its folder index and the GitTarget, edited one event at a time."""

    def __init__(self, work: Path, hand_written: bool, plain: bool) -> None:
        self.ws = Workspace(work, "file:///nowhere", "main")
        self.uid = GitTargetUid(work.name)
        self.target: TargetConfig = target_config(
            self.uid, "shop", "gt", "file:///nowhere", "main", path=FOLDER
        )
        if hand_written:
            self.ws.write(HAND_PATH, HAND_WRITTEN.encode())
        self.folder = Folder(self.ws, FOLDER, {})
        self._writer = apply_plain if plain else apply_event
        if not hand_written:  # the product writes it first, as it mirrors a new object
            self._apply(dataclasses.replace(_event(self.uid, -1), operation="CREATE"))
        self.path = HAND_PATH if hand_written else self._only_file()

    def _only_file(self) -> str:
        located = self.folder.find(("apps", "Deployment", "shop", "web"))
        assert located is not None
        return located.path

    def _apply(self, event: ObjectEvent) -> None:
        applied = self._writer(self.ws, self.target, event, self.folder)
        if applied.kind != "write":
            raise RuntimeError(f"bench: the writer did not write: {applied}")

    def edit(self, i: int) -> float:
        event = _event(self.uid, i)
        start = time.perf_counter()
        self._apply(event)
        return time.perf_counter() - start

    def text(self) -> str:
        data = self.ws.read(self.path)
        assert data is not None
        return data.decode()


def _check(hand: _Side, product: _Side, plain: _Side) -> None:
    """What was timed is what the rows say: the hand-written file kept its comments and
    changed one line; the plain writer's lost them; every side holds the last image."""
    last = _body(EDITS - 1)
    for side in (hand, product, plain):
        if yaml.safe_load(side.text()) != last:
            raise RuntimeError(f"bench: {side.path} does not hold the last edit")
    changed = [
        (a, b)
        for a, b in zip(HAND_WRITTEN.splitlines(), hand.text().splitlines(), strict=True)
        if a != b
    ]
    if len(changed) != 1 or "image:" not in changed[0][1]:
        raise RuntimeError(f"bench: the in-place edit changed {changed}")
    if "#" in plain.text():
        raise RuntimeError("bench: the plain writer kept comments: it edited in place")


def bench() -> Section:
    """The three sides, taking turns."""
    section = Section(
        "The writer alone: editing a hand-written file in place",
        ".venv/bin/python -m bench writer",
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        hand = _Side(root / "hand", hand_written=True, plain=False)
        product = _Side(root / "product", hand_written=False, plain=False)
        plain = _Side(root / "plain", hand_written=True, plain=True)
        sides = [hand, product, plain]
        times: list[list[float]] = [[] for _ in sides]
        for i in range(EDITS):
            for k in range(len(sides)):
                which = (i + k) % len(sides)
                times[which].append(sides[which].edit(i))
        _check(hand, product, plain)
    rates = [len(t) / sum(t) for t in times]
    lines = len(HAND_WRITTEN.splitlines())
    for what, rate, values in (
        (f"hand-written Deployment ({lines} lines, comments), in place", rates[0], times[0]),
        ("the same Deployment in a file the product wrote", rates[1], times[1]),
        ("hand-written Deployment, plain writer (bench.plain): whole", rates[2], times[2]),
    ):
        section.add(f"{what}: edits", rate, "edits/s", f"{len(values)} edits")
        section.add(f"{what}: p50", percentile(values, 50) * 1000, "ms")
    section.add("in place / product-written, speed", rates[0] / rates[1], "")
    section.add("in place / plain writer (whole), speed", rates[0] / rates[2], "")
    section.notes.append(
        "One write per edit (apply_event; apply_plain for the plain writer: the image of the "
        "first container changes), in a work tree "
        "that is never committed: the writer's own cost, without git, Redis or the network. "
        "The sides take turns, one edit each per round. The hand-written file keeps every "
        "comment and changes one line (checked at the end); the product-written one is "
        "rewritten whole, recognised by the digest of what the writer last rendered there; "
        "the plain writer (bench.plain) rewrites the "
        "hand-written file whole and drops its comments, as the writer did before issue 14."
    )
    return section
