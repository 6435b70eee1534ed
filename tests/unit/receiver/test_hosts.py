"""Issue 25 item 4: the Git-host table is the one place a host is added.

Each ``spec.receiver.type`` is one ``GitHost`` record in ``services.receiver.hosts.HOSTS``
(verifier, parser, event and delivery headers); these tests fail when a host is missing from
the table, from ``ReceiverType`` or from the GitProvider CRD's enum, when a record leaves an
entry empty, or when the table's modules leave the receiver's no-I/O contract.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from sandbox.paths import CHART_CRDS
from services.receiver.deliveries import Push, parse
from services.receiver.hosts import HOSTS, host_of
from services.receiver.verify import Verified, verifier_for, verify
from shared.model.receivers import RECEIVER_TYPES, ReceiverType
from tests.unit.receiver import samples

ROOT = Path(__file__).resolve().parents[3]


def _crd_enum() -> list[str]:
    crd = yaml.safe_load((CHART_CRDS / "gitopsreverser.io_gitproviders.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    enum: list[str] = spec["properties"]["receiver"]["properties"]["type"]["enum"]
    return enum


def test_every_host_is_in_the_table_the_literal_and_the_crd() -> None:
    assert set(get_args(ReceiverType)) == set(RECEIVER_TYPES) == set(HOSTS) == set(_crd_enum())
    assert all(host_of(kind).type == kind for kind in RECEIVER_TYPES)


@pytest.mark.parametrize("kind", RECEIVER_TYPES)
def test_every_host_has_every_entry(kind: ReceiverType) -> None:
    host = HOSTS[kind]
    assert callable(host.verify) and callable(host.read)
    assert host.delivery_headers and all(host.delivery_headers)
    # Only a sender that names no event (generic-hmac) or names it in the body (Azure DevOps's
    # eventType) goes without an event header.
    assert bool(host.event_headers) == (kind not in ("generic-hmac", "azure-devops"))
    assert verifier_for(kind) is host.verify


@pytest.mark.parametrize(("name", "delivery"), sorted(samples.every_kind().items()))
def test_each_hosts_push_goes_through_its_record(name: str, delivery: Any) -> None:
    """A real-looking push of every host verifies and parses through the table's record."""
    kind: ReceiverType = samples.kind_of(name)  # type: ignore[assignment]
    verdict = verify(kind, delivery.headers, delivery.body, delivery.content_type, samples.SECRET)
    assert isinstance(verdict, Verified)
    parsed = parse(kind, delivery.headers, verdict.document)
    assert isinstance(parsed, Push)
    assert [u.ref for u in parsed.updates] == ["refs/heads/main"]


def test_the_tables_modules_are_under_the_no_io_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    pure = next(c for c in contracts if c["name"].startswith("the receiver's verifiers"))
    wanted = {"hosts", "signatures", "payloads", "verify", "deliveries", "routing"}
    assert {f"services.receiver.{m}" for m in wanted} <= set(pure["source_modules"])
