"""The CLI's pure parts: its tables, ages, request values, kinds and flags (no cluster)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from services.cli.app import parser
from services.cli.errors import NotFoundError
from services.cli.get import age, ready_of
from services.cli.install import with_address
from services.cli.output import table
from services.cli.targets import request_value
from services.cli.trace import resolve_kind
from shared.model.resources import ApiResource, Catalog


def test_a_table_pads_columns_and_shows_empty_cells_as_dashes() -> None:
    out = io.StringIO()
    rows = [{"name": "apps", "ready": True, "owed": ["CatchUp", "Refusal"]}, {"name": "b"}]
    table(rows, {"name": "NAME", "ready": "READY", "owed": "OWED"}, out)
    assert out.getvalue().splitlines() == [
        "NAME   READY   OWED",
        "apps   True    CatchUp,Refusal",
        "b      -       -",
    ]


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0, "0s"), (59.9, "59s"), (60, "1m"), (7200, "2h"), (90000, "1d")]
)
def test_ages_read_as_kubectl_prints_them(seconds: float, shown: str) -> None:
    assert age(seconds) == shown


def test_the_ready_message_falls_back_to_the_reason() -> None:
    cond = {"type": "Ready", "status": "False", "reason": "GitProviderNotFound"}
    assert ready_of({"status": {"conditions": [cond]}}) == ("False", "GitProviderNotFound")
    assert ready_of({}) == ("Unknown", "waiting for the watcher")


def test_a_request_value_is_the_time_to_the_microsecond() -> None:
    moment = datetime(2026, 12, 6, 9, 30, 15, 120, tzinfo=UTC)
    assert request_value(moment) == "2026-12-06T09:30:15.000120Z"


def test_an_address_replaces_host_and_port_and_keeps_the_password() -> None:
    url = "redis://:pw@gr-gitops-reverser-redis.gr.svc:6379/0"
    assert with_address(url, "127.0.0.1:7000") == "redis://:pw@127.0.0.1:7000/0"
    assert with_address("redis://h:1/2", "x:3") == "redis://x:3/2"


def test_kinds_are_read_as_kubectl_reads_them() -> None:
    cm = ApiResource("", "v1", "configmaps", "ConfigMap", True)
    deploy = ApiResource("apps", "v1", "deployments", "Deployment", True)
    old = ApiResource("apps", "v1beta1", "deployments", "Deployment", True)
    catalog = Catalog({"": ("v1",), "apps": ("v1", "v1beta1")}, (cm, deploy, old))
    for text in ("configmap", "ConfigMap", "configmaps"):
        assert resolve_kind(catalog, text) == cm
    assert resolve_kind(catalog, "deployments.apps") == deploy
    with pytest.raises(NotFoundError):
        resolve_kind(catalog, "deployments.batch")


def test_global_flags_go_before_or_after_the_subcommand() -> None:
    after = parser().parse_args(["get", "targets", "-A", "--kubeconfig", "k", "-o", "json"])
    before = parser().parse_args(["--kubeconfig", "k", "-o", "json", "get", "targets", "-A"])
    for args in (after, before):
        assert (args.kubeconfig, args.output, args.all_namespaces) == ("k", "json", True)
    assert parser().parse_args(["get", "gt"]).output == "table"
