"""The Argo CD request as pure rules (D5, D6, A1), case by case.

Shapes follow ../shared/facts/appliers.md A2 (the operation autoSync builds, SetAppOperation's
update clearing ``status.operationState``), appliers.md A3 (phases; ``Running`` with
``finishedAt`` is a retry wait; ``retry.refresh`` drops the pinned revision) and the real
Application CRD, which the built operation is decoded against with no unknown field.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
import yaml

from sandbox.paths import third_party_crd_files
from shared.decide.argo import (
    TOKEN_INFO,
    already_attempted,
    finished_phase,
    outcome_message,
    running,
    sync_operation,
    with_operation,
)
from shared.decide.attempt import MAX_CONFLICTS, after_busy
from shared.decide.obligations import (
    Ask,
    Wait,
    decide,
    owe_catch_up,
    owe_foreign_commit,
    owe_refusal,
)
from shared.decide.quiet import BranchView
from shared.model.appliers import Applier, catches_up
from shared.model.config import ApplierRef

URL = "https://git.example.org/team/config.git"
COMMIT = "c" * 40
SOURCE = {"repoURL": URL, "path": "apps", "targetRevision": "main"}
QUIET = BranchView(
    tip=COMMIT, windows_open=0, pending_total=0, push_in_flight=False, last_write_at=0.0
)


def application(
    policy: dict[str, Any] | None = None,
    state: dict[str, Any] | None = None,
    operation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    app: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"namespace": "argocd", "name": "web", "resourceVersion": "42"},
        "spec": {
            "project": "default",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
            "source": copy.deepcopy(SOURCE),
            "syncPolicy": policy or {},
        },
        "status": {"sync": {"status": "OutOfSync", "revision": COMMIT}},
    }
    if state is not None:
        app["status"]["operationState"] = state
    if operation is not None:
        app["operation"] = operation
    return app


def ours(token: str = "tok", **state: Any) -> dict[str, Any]:
    """An operationState whose operation carries ``token``."""
    operation = sync_operation(application(), COMMIT, token, ["ForeignCommit"])
    return {"operation": operation, "startedAt": "2026-12-01T10:00:00Z", **state}


# ---- the operation (D5, appliers.md A2) -----------------------------------------------------


def test_the_operation_is_autosyncs_pinned_with_our_initiator_and_token() -> None:
    """D5: source copied, prune from automated.prune kept with enabled: false, syncOptions and
    retry from syncPolicy, revision pinned, initiatedBy gitops-reverser automated, token in
    info."""
    policy = {
        "automated": {"enabled": False, "prune": True, "selfHeal": True},
        "syncOptions": ["ServerSideApply=true", "PruneLast=true"],
        "retry": {"limit": 3, "backoff": {"duration": "5s", "factor": 2}, "refresh": True},
    }
    op = sync_operation(application(policy), COMMIT, "tok-1", ["Refusal", "ForeignCommit"])
    assert op == {
        "sync": {
            "revision": COMMIT,
            "source": SOURCE,
            "prune": True,
            "syncOptions": ["ServerSideApply=true", "PruneLast=true"],
        },
        "initiatedBy": {"username": "gitops-reverser", "automated": True},
        "info": [
            {"name": TOKEN_INFO, "value": "tok-1"},
            {"name": "gitops-reverser/reasons", "value": "ForeignCommit+Refusal"},
        ],
        "retry": {"limit": 3, "backoff": {"duration": "5s", "factor": 2}},
    }


def test_without_a_policy_prune_is_off_and_retry_is_autosyncs_default() -> None:
    """Facts appliers.md A2: ``automated.GetPrune()`` is false on a nil block; no
    ``syncPolicy.retry`` means autosync's ``{limit: 5}``; no syncOptions are invented."""
    op = sync_operation(application(), COMMIT, "tok", ["ForeignCommit"])
    assert op["sync"] == {"revision": COMMIT, "source": SOURCE, "prune": False}
    assert op["retry"] == {"limit": 5}


def test_a_retry_refresh_false_is_left_out_too() -> None:
    """Facts appliers.md A3: only an absent ``refresh`` can never drop the pinned revision."""
    op = sync_operation(application({"retry": {"limit": 1, "refresh": False}}), COMMIT, "t", [])
    assert op["retry"] == {"limit": 1}


def _unknown_fields(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    if isinstance(value, dict) and "properties" in schema:
        found = [f"{where}.{k}" for k in value if k not in schema["properties"]]
        for key, item in value.items():
            if key in schema["properties"]:
                found += _unknown_fields(item, schema["properties"][key], f"{where}.{key}")
        return found
    if isinstance(value, list) and "items" in schema:
        return [f for i, v in enumerate(value) for f in _unknown_fields(v, schema["items"], where)]
    return []


def test_the_written_application_decodes_against_the_real_crd() -> None:
    """The Application we PUT (operation set) has no field the real CRD does not know."""
    [path] = [p for p in third_party_crd_files() if "application" in p.name]
    crd = yaml.safe_load(path.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    policy = {"automated": {"enabled": False, "prune": True}, "syncOptions": ["Validate=false"]}
    app = application(policy, state=ours(phase="Succeeded"))
    written = with_operation(app, sync_operation(app, COMMIT, "tok", ["Refusal"]))
    assert _unknown_fields(written, schema, "") == []
    assert "operation" in schema["properties"]


def test_the_update_clears_the_operation_state_and_keeps_the_guard() -> None:
    """Facts appliers.md A2 SetAppOperation: operation set, ``status.operationState``
    cleared, the rest of the status and the resourceVersion read kept; the Application read is not
    changed."""
    app = application(state=ours(phase="Succeeded"))
    before = copy.deepcopy(app)
    op = sync_operation(app, COMMIT, "tok-2", ["ForeignCommit"])
    written = with_operation(app, op)
    assert written["operation"] == op
    assert "operationState" not in written["status"]
    assert written["status"]["sync"] == app["status"]["sync"]
    assert written["metadata"]["resourceVersion"] == "42"
    assert app == before


# ---- a running operation is waited out (D5) --------------------------------------------------


@pytest.mark.parametrize(
    ("state", "operation", "busy"),
    [
        (None, None, False),
        ({"phase": "Succeeded"}, None, False),
        ({"phase": "Failed"}, None, False),
        ({"phase": "Error"}, None, False),
        ({"phase": "Running"}, None, True),
        ({"phase": "Running", "finishedAt": "2026-12-01T10:00:00Z"}, None, True),
        ({"phase": "Terminating"}, None, True),
        (None, {"sync": {}}, True),  # set, not yet picked up by the controller
        ({"phase": "Succeeded"}, {"sync": {}}, True),  # a new one over a finished state
    ],
)
def test_an_operation_in_progress_is_never_replaced(
    state: dict[str, Any] | None, operation: dict[str, Any] | None, busy: bool
) -> None:
    """D5: ``operation`` set (what SetAppOperation refuses on) or a state not completed
    (appliers.md A3: Running, a retry wait, a sync window's hold, Terminating) means wait."""
    why = running(application(state=state, operation=operation))
    assert (why is not None) is busy


def test_the_wait_message_names_the_window() -> None:
    """Facts appliers.md A6: a sync window holds the operation Running with its message,
    which people see."""
    held = {"phase": "Running", "message": "Sync operation blocked by sync window"}
    why = running(application(state=held))
    assert why == "an operation is Running: Sync operation blocked by sync window"
    assert running(application(operation={"initiatedBy": {"username": "alice"}})) == (
        "an operation is set (by alice), not started yet"
    )


@pytest.mark.parametrize(
    ("conflict", "conflicts", "now", "step"),
    [
        (False, 0, 10.0, "pause"),
        (False, 0, 100.0, "give-up"),
        (True, 1, 10.0, "read-now"),
        (True, MAX_CONFLICTS, 100.0, "read-now"),
        (True, MAX_CONFLICTS + 1, 10.0, "give-up"),
    ],
)
def test_a_busy_applier_is_read_again_within_bounds(
    conflict: bool, conflicts: int, now: float, step: str
) -> None:
    """D5: a running operation is waited for until the attempt's deadline (100 here); a 409 is
    read again at once, a bounded number of times."""
    assert after_busy(conflict, conflicts, now, deadline=100.0) == step


# ---- Unneeded --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "reasons", "unneeded"),
    [
        (None, ["ForeignCommit"], False),
        ({"phase": "Succeeded", "syncResult": {"revision": COMMIT}}, ["ForeignCommit"], True),
        ({"phase": "Failed", "syncResult": {"revision": COMMIT}}, ["ForeignCommit"], True),
        ({"phase": "Succeeded", "syncResult": {"revision": "0" * 40}}, ["ForeignCommit"], False),
        ({"phase": "Succeeded", "syncResult": {"revision": COMMIT}}, ["Refusal"], False),
        (
            {"phase": "Succeeded", "syncResult": {"revision": COMMIT}},
            ["ForeignCommit", "Refusal"],
            False,
        ),
    ],
)
def test_only_a_commit_already_synced_without_a_refusal_asks_nothing(
    state: dict[str, Any] | None, reasons: list[Any], unneeded: bool
) -> None:
    """Facts appliers.md A2 ``alreadyAttemptedSync``: a finished sync of the commit is not
    asked again; a Refusal always is (it reverts drift at an unchanged commit)."""
    assert already_attempted(application(state=state), COMMIT, reasons) is unneeded


# ---- handled (D6) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "phase"),
    [
        (ours(phase="Running"), None),
        (ours(phase="Running", finishedAt="2026-12-01T10:01:00Z", retryCount=1), None),
        (ours(phase="Terminating"), None),
        (ours(phase="Succeeded"), "Succeeded"),
        (ours(phase="Failed"), "Failed"),
        (ours(phase="Error"), "Error"),
        (ours("someone-else", phase="Succeeded"), None),
        ({"phase": "Succeeded", "operation": {"sync": {}}}, None),
    ],
)
def test_handled_only_when_our_operation_completed(
    state: dict[str, Any], phase: str | None
) -> None:
    """D6: our token's operationState reached Succeeded, Failed or Error; a retry wait
    (Running with finishedAt) or another operation's state is not ours finished."""
    assert finished_phase(application(state=state), "tok") == phase


def test_the_outcome_names_the_phase_and_argos_message() -> None:
    """D6: a Failed sync is delivered, and the ledger says it failed and why."""
    state = ours(
        phase="Failed",
        message="one or more objects failed to apply (retried 2 times).",
        syncResult={"revision": COMMIT},
    )
    assert outcome_message(application(state=state), "tok") == (
        f"sync Failed at {COMMIT[:12]}: one or more objects failed to apply (retried 2 times)."
    )


# ---- obligations (A1-A5 for an Application) --------------------------------------------------


def test_only_a_kustomization_is_ever_owed_a_catch_up() -> None:
    """A1: one rule says which kinds catch up; an Application (or any other kind) never."""
    assert catches_up("Kustomization")
    assert not catches_up("Application")
    assert not catches_up("Webhook")
    recorded = replace(Applier("Application"), catch_up="c1", catch_up_uids=frozenset({"u1"}))
    assert recorded.owes() == {}, "even a record that holds one (written by hand) owes none"


def test_an_application_is_owed_foreign_commits_and_refusals_like_a_kustomization() -> None:
    """A1-A5: ForeignCommit and a consented Refusal reach an Application as they reach a
    Kustomization, in one request on a quiet branch; our own push owes it nothing."""
    for kind in ("Application", "Kustomization"):
        applier = owe_refusal(owe_foreign_commit(Applier(kind), COMMIT, ["u1"]), "u2", True)
        applier = owe_catch_up(applier, COMMIT, ["u1"])
        ask = decide(applier, QUIET, now=1000.0)
        assert isinstance(ask, Ask)
        expected = {"ForeignCommit": {"u1"}, "Refusal": {"u2"}}
        if kind == "Kustomization":
            expected["CatchUp"] = {"u1"}
        assert ask.reasons == expected
    pushed = owe_catch_up(Applier("Application"), COMMIT, ["u1"])
    assert decide(pushed, QUIET, now=1000.0) == Wait("nothing owed")


def test_the_applier_key_includes_its_kind() -> None:
    """§0 Applier key: kind, ClusterProvider, namespace, name; an Application and a
    Kustomization of one name keep separate obligations."""
    app = ApplierRef("Application", "argocd", "web", "default")
    ks = ApplierRef("Kustomization", "argocd", "web", "default")
    assert app.key != ks.key
    assert app.key == ApplierRef("Application", "argocd", "web", "default").key
