"""An app under test: the receiver over fakeredis, a dict of Secrets, a settable clock.

Shared by the unit tests of the receiver's answers (the ``rig`` fixture is in conftest.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import fakeredis
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import CollectorRegistry
from werkzeug.test import TestResponse

from services.receiver.app import create_app
from services.receiver.audit import AuditStores
from services.receiver.intake import Stores
from shared.model.ids import Branch
from shared.model.receivers import ReceiverRecord, webhook_digest, webhook_path
from shared.settings import Settings
from shared.store.attribution import AuditRoutes, FactStreams
from shared.store.keys import Keys
from shared.store.notice_reader import NoticeReader
from shared.store.notices import NoticeWriter
from shared.store.receivers import ReceiverDirectory
from tests.unit.receiver.samples import REPO_URL, SECRET, Delivery

LIMIT = 64 * 1024


@dataclass
class Secrets:
    """A SecretSource over a dict that counts its reads."""

    values: dict[tuple[str, str, str], bytes] = field(default_factory=dict)
    reads: int = 0
    failure: Exception | None = None

    def __call__(self, namespace: str, name: str, key: str) -> bytes | None:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        return self.values.get((namespace, name, key))


@dataclass
class Rig:
    """An app with its fake Redis server, secrets, clock and metrics registry."""

    app: Flask
    client: FlaskClient
    server: fakeredis.FakeServer
    redis: fakeredis.FakeRedis
    keys: Keys
    secrets: Secrets
    registry: CollectorRegistry
    now: list[float]

    def add(
        self,
        kind: str,
        name: str = "gp",
        namespace: str = "team",
        branches: tuple[str, ...] = ("main",),
        token: bytes = SECRET,
    ) -> str:
        """Publish a receiver as the watcher would; returns its webhook path."""
        record = ReceiverRecord(
            namespace,
            name,
            kind,
            f"{name}-hook",  # type: ignore[arg-type]
            REPO_URL,
            branches,
        )
        digest = webhook_digest(token, name, namespace)
        ReceiverDirectory(self.redis, self.keys).publish(digest, record)
        self.secrets.values[(namespace, f"{name}-hook", "token")] = token
        return webhook_path(token, name, namespace)

    def post(self, path: str, d: Delivery) -> TestResponse:
        return self.client.post(path, data=d.body, headers=d.headers)

    def notices(self, branch: str = "main") -> list[Any]:
        return NoticeReader(self.redis, self.keys).read(Branch(REPO_URL, branch).key, count=100)

    def count(self, kind: str, result: str) -> float:
        value = self.registry.get_sample_value(
            "gitops_reverser_receiver_deliveries_total", {"type": kind, "result": result}
        )
        return value or 0.0


def make_rig() -> Rig:
    """A fresh app over a fresh fake Redis."""
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    keys = Keys("test")
    secrets = Secrets()
    registry = CollectorRegistry()
    now = [1000.0]
    stores = Stores(ReceiverDirectory(client, keys), NoticeWriter(client, keys))
    app = create_app(
        Settings(max_body_bytes=LIMIT),
        store=stores,
        audit_stores=AuditStores(AuditRoutes(client, keys), FactStreams(client, keys)),
        secrets=secrets,
        clock=lambda: now[0],
        registry=registry,
    )
    return Rig(app, app.test_client(), server, client, keys, secrets, registry, now)


def answer(response: TestResponse) -> tuple[int, str]:
    body = response.get_json()
    assert set(body) == {"status", "reason"} and body["reason"]
    return response.status_code, body["status"]
