"""Receiver records and webhook paths, as the watcher publishes them and the receiver reads them."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml

from shared.model.receivers import (
    RECEIVER_TYPES,
    ReceiverRecord,
    RecordError,
    webhook_digest,
    webhook_path,
)

CRD = Path(__file__).resolve().parents[3] / "charts/gitops-reverser/crds"


def _gitprovider_schema() -> dict:  # type: ignore[type-arg]
    crd = yaml.safe_load((CRD / "gitopsreverser.io_gitproviders.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def test_the_digest_is_fluxs_sha256_of_token_name_namespace() -> None:
    """Facts §1.6 (Flux GetWebhookPath): /hook/ + hex sha256(token + name + namespace)."""
    expected = hashlib.sha256(b"s3cr3t" + b"apps" + b"team").hexdigest()
    assert webhook_digest(b"s3cr3t", "apps", "team") == expected
    assert webhook_path(b"s3cr3t", "apps", "team") == "/hook/" + expected


def test_the_path_matches_the_crds_status_pattern() -> None:
    """Our own CRD: status.receiver.webhookPath must match its pattern."""
    schema = _gitprovider_schema()
    pattern = schema["properties"]["status"]["properties"]["receiver"]["properties"]["webhookPath"][
        "pattern"
    ]
    assert re.fullmatch(pattern.strip("^$"), webhook_path(b"t", "n", "ns"))


def test_the_types_are_the_crds_enum() -> None:
    """spec.receiver.type enumerates exactly the verifiers we have."""
    receiver = _gitprovider_schema()["properties"]["spec"]["properties"]["receiver"]
    assert tuple(receiver["properties"]["type"]["enum"]) == RECEIVER_TYPES


def test_a_record_round_trips_and_names_no_secret() -> None:
    """R5: the record names the Secret, never its value."""
    record = ReceiverRecord(
        "team", "apps", "gitea", "apps-webhook", "https://x/y.git", ("main", "dev")
    )
    text = record.to_json()
    assert ReceiverRecord.from_json(text) == ReceiverRecord(
        "team", "apps", "gitea", "apps-webhook", "https://x/y.git", ("dev", "main")
    )
    assert "token" not in text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"type": "svn"}',
        '{"type": "github", "provider_name": 1, "branches": []}',
        '{"type": "github", "provider_namespace": "a", "provider_name": "b", "secret_name": "c",'
        ' "url": "d", "branches": "main"}',
    ],
)
def test_an_unreadable_record_is_refused(text: str) -> None:
    """A record from another version, or damaged, is no receiver (404), never a crash."""
    with pytest.raises(RecordError):
        ReceiverRecord.from_json(text)
