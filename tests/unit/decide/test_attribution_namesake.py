"""Issue 27.12, P5: the Go operator's regression of 2026-10-06 (facts: upstream-0.50.md) as a
test over every shape a delete fact takes. For ten minutes after a ``kubectl delete`` its
deleter was credited as the author of writes to a new object of the same name. Here a delete
(whatever it names: the old uid in ``details``, the old uid in ``objectRef``, no uid at all, a
deletecollection listing the old uid) is never credited to a later object of the same name and
another uid, for any operation, before or after the grace, even when it is the only fact left
and the newest."""

from __future__ import annotations

from typing import Any

import pytest

from shared.decide.attribution import Accepted, accept, join
from shared.model.attribution import AuthorFact

OLD, NEW = "u-old", "u-new"


def _delete_event(**changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "stage": "ResponseComplete",
        "verb": "delete",
        "requestURI": "/api/v1/namespaces/t/configmaps/x",
        "user": {"username": "deleter"},
        "objectRef": {"resource": "configmaps", "namespace": "t", "name": "x", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 200},
        "responseObject": {"kind": "Status", "status": "Success", "details": {"uid": OLD}},
        "stageTimestamp": "2026-10-06T10:00:00.000000Z",
    }
    event.update(changes)
    return event


def _accepted(event: dict[str, Any]) -> AuthorFact:
    decision = accept(event)
    assert isinstance(decision, Accepted), decision
    return decision.fact


SHAPES = {
    "status-details-uid": _delete_event(),
    "objectref-uid": _delete_event(
        objectRef={"resource": "configmaps", "namespace": "t", "name": "x", "uid": OLD},
        responseObject=None,
    ),
    "no-uid-at-all": _delete_event(responseObject={"kind": "Status", "status": "Success"}),
    "deletecollection": _delete_event(
        verb="deletecollection",
        objectRef={"resource": "configmaps", "namespace": "t"},
        responseObject={"kind": "ConfigMapList", "items": [{"metadata": {"uid": OLD}}]},
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE", "DELETE"])
@pytest.mark.parametrize("grace_over", [False, True])
def test_a_delete_is_never_credited_to_a_later_object_of_the_same_name(
    shape: str, operation: str, grace_over: bool
) -> None:
    fact = _accepted(SHAPES[shape])
    assert fact.author == "deleter"
    joined = join(
        operation,
        uid=NEW,
        resource_version="20",
        namespace="t",
        name="x",
        facts=[fact],
        grace_over=grace_over,
    )
    if not grace_over:
        assert joined is None  # it waits for its own fact
    else:
        assert joined is not None and (joined.tier, joined.fact) == ("absent", None)


def test_the_delete_still_answers_the_delete_of_its_own_uid() -> None:
    """The same facts are not dropped: the old object's DELETE is credited to its deleter."""
    for shape in ("status-details-uid", "objectref-uid", "deletecollection"):
        fact = _accepted(SHAPES[shape])
        joined = join(
            "DELETE",
            uid=OLD,
            resource_version="19",
            namespace="t",
            name="x",
            facts=[fact],
            grace_over=False,
        )
        assert joined is not None and joined.fact == fact, shape
