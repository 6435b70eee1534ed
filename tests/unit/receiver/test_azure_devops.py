"""Azure DevOps service hooks (issue 27 item 11): basic authentication whose password is the
receiver's token, the event and delivery id in the body, refUpdates as the moved refs, and the
repository matched across its HTTPS (``/_git/``) and SSH (``v3/``) URLs."""

from __future__ import annotations

import pytest

from services.receiver.deliveries import Ignored, Malformed, Push, RefUpdate, parse
from services.receiver.routing import route, same_repository
from services.receiver.verify import Refused, Verified, verify
from shared.model.notices import PushNotice
from shared.model.receivers import ReceiverRecord
from tests.unit.receiver import samples
from tests.unit.receiver.samples import AFTER, SECRET, ZERO

HTTPS = "https://dev.azure.com/team/platform/_git/apps"
RECORD = ReceiverRecord("team", "gp", "azure-devops", "hook", HTTPS, ("main",))


def _parsed(payload: dict[str, object], activity: str = "a-1") -> Push | Ignored:
    delivery = samples.azure_devops(payload, activity=activity)
    verdict = verify("azure-devops", delivery.headers, delivery.body, delivery.content_type, SECRET)
    assert isinstance(verdict, Verified)
    parsed = parse("azure-devops", delivery.headers, verdict.document)
    assert isinstance(parsed, Push | Ignored)
    return parsed


def test_a_push_names_its_refs_and_the_notifications_id_is_the_delivery() -> None:
    parsed = _parsed(samples.azure_devops_push())
    assert isinstance(parsed, Push)
    assert parsed.event == "git.push"
    assert parsed.updates == (RefUpdate("refs/heads/main", AFTER),)
    assert parsed.delivery == "03c164c2-8912-4d5e-8009-3707d5f83734"
    # A retry is a new request (another activity id) of the same notification.
    again = _parsed(samples.azure_devops_push(), activity="a-2")
    assert isinstance(again, Push) and again.delivery == parsed.delivery


def test_a_deleted_branch_moves_to_zeros_and_a_tag_is_a_ref_too() -> None:
    payload = samples.azure_devops_push()
    payload["resource"]["refUpdates"] = [  # type: ignore[index]
        {"name": "refs/heads/main", "oldObjectId": AFTER, "newObjectId": ZERO},
        {"name": "refs/tags/v1", "oldObjectId": ZERO, "newObjectId": AFTER},
        {"name": "not-a-ref", "newObjectId": AFTER},
        "garbage",
    ]
    parsed = _parsed(payload)
    assert isinstance(parsed, Push)
    assert parsed.updates == (
        RefUpdate("refs/heads/main", ZERO),
        RefUpdate("refs/tags/v1", AFTER),
    )


def test_other_events_are_answered_and_ignored() -> None:
    payload = samples.azure_devops_push()
    payload["eventType"] = "git.pullrequest.created"
    assert isinstance(_parsed(payload), Ignored)


@pytest.mark.parametrize("updates", [None, "x", {"name": "refs/heads/main"}])
def test_a_push_without_a_list_of_ref_updates_is_malformed(updates: object) -> None:
    payload = samples.azure_devops_push()
    payload["resource"]["refUpdates"] = updates  # type: ignore[index]
    delivery = samples.azure_devops(payload)
    with pytest.raises(Malformed):
        parse("azure-devops", delivery.headers, delivery.document)


@pytest.mark.parametrize(
    "authorization",
    [
        "",
        "Bearer " + SECRET.decode(),
        "Basic !!!",
        "Basic " + "aG9vaw==",  # "hook": no colon, so no password
        samples.basic_auth("hook", SECRET + b"x"),
        samples.basic_auth("hook", b""),
    ],
)
def test_anything_but_the_token_as_basic_password_is_refused(authorization: str) -> None:
    delivery = samples.azure_devops(samples.azure_devops_push())
    delivery = delivery.with_header("Authorization", authorization or None)
    verdict = verify("azure-devops", delivery.headers, delivery.body, delivery.content_type, SECRET)
    assert isinstance(verdict, Refused)


def test_any_username_with_the_token_is_accepted() -> None:
    delivery = samples.azure_devops(samples.azure_devops_push()).with_header(
        "Authorization", samples.basic_auth("whoever set up the hook", SECRET)
    )
    verdict = verify("azure-devops", delivery.headers, delivery.body, delivery.content_type, SECRET)
    assert isinstance(verdict, Verified)


@pytest.mark.parametrize(
    "named",
    [
        HTTPS,
        "https://team@dev.azure.com/team/platform/_git/apps",
        "git@ssh.dev.azure.com:v3/team/platform/apps",
        "https://tfs.example.com/tfs/team/platform/_git/apps",  # Azure DevOps Server
    ],
)
def test_the_repository_is_matched_across_its_https_and_ssh_urls(named: str) -> None:
    assert same_repository(named, HTTPS)
    assert same_repository(named, "git@ssh.dev.azure.com:v3/team/platform/apps")


def test_a_push_routes_to_the_branch_its_gittargets_use() -> None:
    parsed = _parsed(samples.azure_devops_push(remote_url=HTTPS))
    assert isinstance(parsed, Push)
    routed = route(RECORD, parsed, received_at=3.0)
    assert routed.notices == (
        PushNotice("team/gp", HTTPS, "refs/heads/main", AFTER, parsed.delivery, 3.0),
    )
    elsewhere = _parsed(samples.azure_devops_push(remote_url=HTTPS.replace("apps", "other")))
    assert isinstance(elsewhere, Push)
    assert route(RECORD, elsewhere, received_at=3.0).notices == ()
