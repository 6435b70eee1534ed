"""The ledger entry (S3): built from a request and its outcome, stored as JSON, shown in status.

``to_status`` is checked against the GitTarget CRD's own ``status.applier.lastRequest`` schema
through the sandbox's validator, so the record and the CRD cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sandbox.kube import schema
from shared.model.appliers import OUTCOMES, REASONS
from shared.model.config import ApplierRef
from shared.model.ledger import MAX_MESSAGE, LastRequest
from shared.model.requests import ApplyRequest, AttemptOutcome

T0 = 1_900_000_000.0
CRD = Path(__file__).parents[3] / "charts/gitops-reverser/crds/gitopsreverser.io_gittargets.yaml"
ENTRY = LastRequest(
    token="req-1",
    commit="c" * 40,
    reasons=("CatchUp", "ForeignCommit"),
    sent_at=T0 + 0.25,
    finished_at=T0 + 12.5,
    outcome="Delivered",
)


def _last_request_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    found: dict[str, Any] = status["properties"]["applier"]["properties"]["lastRequest"]
    return found


def test_the_entry_of_a_request_and_its_outcome() -> None:
    """The dispatcher's view: reasons sorted, the request's sent time, the outcome's finish."""
    request = ApplyRequest(
        token="req-1",
        branch_key="bk",
        url="https://git.example.com/org/repo",
        branch="main",
        commit="c" * 40,
        reasons={"ForeignCommit": ["uid-a"], "CatchUp": ["uid-a", "uid-b"]},
        applier=ApplierRef("Kustomization", "flux-system", "apps", "default"),
        sent_at=T0 + 0.25,
    )
    outcome = AttemptOutcome("req-1", "Failed", "x" * (MAX_MESSAGE + 5), [], T0 + 12.5)
    entry = LastRequest.of(request, outcome)
    assert entry.reasons == ("CatchUp", "ForeignCommit")
    assert (entry.sent_at, entry.finished_at, entry.outcome) == (T0 + 0.25, T0 + 12.5, "Failed")
    assert entry.message == "x" * MAX_MESSAGE


def test_status_speaks_the_crd_shape() -> None:
    """camelCase names, RFC 3339 times, and no empty message (an empty field says nothing)."""
    assert ENTRY.to_status() == {
        "reasons": ["CatchUp", "ForeignCommit"],
        "commit": "c" * 40,
        "token": "req-1",
        "sentAt": "2030-03-17T17:46:40Z",
        "finishedAt": "2030-03-17T17:46:52Z",
        "outcome": "Delivered",
    }
    failed = LastRequest("t", "c" * 40, ("Refusal",), T0, T0, "Failed", "SourceMismatch: x")
    assert failed.to_status()["message"] == "SourceMismatch: x"


@pytest.mark.parametrize("message", ["", "tip moved"])
def test_status_is_valid_against_the_git_target_crd(message: str) -> None:
    """Every field is one the CRD defines (nothing pruned) and every value passes its schema."""
    shown = LastRequest("t", "c" * 40, REASONS, T0, T0 + 1, "Stale", message).to_status()
    checked = schema.check(_last_request_schema(), shown)
    assert checked.errors == []
    assert checked.unknown_fields == []
    assert checked.obj == shown


@given(
    reasons=st.lists(st.sampled_from(REASONS), unique=True).map(lambda r: tuple(sorted(r))),
    outcome=st.sampled_from(OUTCOMES),
    sent_at=st.floats(min_value=0, max_value=4e9),
    message=st.text(max_size=20),
)
def test_json_round_trips(
    reasons: tuple[Any, ...], outcome: Any, sent_at: float, message: str
) -> None:
    entry = LastRequest("t", "c" * 40, reasons, sent_at, sent_at + 1, outcome, message)
    assert LastRequest.from_json(entry.to_json()) == entry


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        json.dumps({"token": "t"}),
        # the camelCase shape the dispatcher wrote before the ledger had a record
        json.dumps({"reasons": ["CatchUp"], "commit": "c", "token": "t", "sentAt": "x"}),
        ENTRY.to_json().replace('"Delivered"', '"Done"'),
        ENTRY.to_json().replace('"CatchUp"', '"Whatever"'),
    ],
)
def test_anything_to_json_did_not_write_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="malformed ledger entry"):
        LastRequest.from_json(text)
