"""The webhook applier's pure rules (D7, S2, T3): its identity, its check, its body, its
signature, and which answers count as delivered."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json

import pytest

from shared.decide.applier_check import Subject
from shared.decide.obligations import owe_catch_up, owe_foreign_commit, owe_refusal
from shared.decide.targets import INVALID_APPLIER
from shared.decide.webhook import (
    SECRET_KEY_NOT_FOUND,
    SECRET_NOT_FOUND,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    TOKEN_HEADER,
    body,
    check_webhook,
    delivered,
    headers,
    signature,
)
from shared.model.appliers import Applier, catches_up
from shared.model.config import ApplierRef, TargetConfig
from shared.model.crds import parse_git_target
from shared.model.ids import GitTargetUid
from shared.model.requests import ApplyRequest
from shared.model.webhook import WebhookEndpoint, shared_endpoint, url_problem
from tests.configs import target_config

URL = "https://deploy.example.com/hook"
ENDPOINT = WebhookEndpoint(URL, "deploy-hook", 10.0)
REF = ApplierRef("Webhook", "team-a", ENDPOINT.name, "default")
SUBJECT = Subject("team-a", "https://git/r", "main", "apps", REF, ENDPOINT)


def _target(namespace: str, webhook: dict[str, object], **applier: object) -> dict[str, object]:
    return {
        "metadata": {"name": "t", "namespace": namespace, "uid": "u1"},
        "spec": {
            "providerRef": {"name": "p"},
            "branch": "main",
            "path": "apps",
            "applier": {"webhook": webhook, **applier},
        },
    }


def test_a_webhook_target_parses_to_an_identity_and_an_endpoint() -> None:
    """D7: kind Webhook, the GitTarget's namespace and ClusterProvider, a name from the
    URL and the Secret; the endpoint (with the 10s default timeout) travels beside it."""
    view = parse_git_target(_target("team-a", {"url": URL, "secretRef": {"name": "deploy-hook"}}))
    assert view.applier_problem == ""
    assert view.applier == ApplierRef("Webhook", "team-a", ENDPOINT.name, "default")
    assert view.webhook == WebhookEndpoint(URL, "deploy-hook", 10.0)
    assert view.applier.name.startswith("webhook-") and "deploy" not in view.applier.name


def test_two_targets_of_one_namespace_on_one_endpoint_share_an_applier_key() -> None:
    """A3: same URL and Secret in one namespace is one applier, whatever the timeouts; another
    namespace (another tenant's Secret) or another Secret is another applier."""
    hook = {"url": URL, "secretRef": {"name": "deploy-hook"}}
    a = parse_git_target(_target("team-a", {**hook, "timeout": "5s"})).applier
    b = parse_git_target(_target("team-a", {**hook, "timeout": "20s"})).applier
    other_ns = parse_git_target(_target("team-b", hook)).applier
    other_secret = parse_git_target(_target("team-a", {**hook, "secretRef": {"name": "x"}}))
    assert a is not None and b is not None and other_ns is not None
    assert a.key == b.key
    assert len({a.key, other_ns.key, other_secret.applier.key if other_secret.applier else ""}) == 3


def test_a_shared_endpoint_waits_the_longest_timeout() -> None:
    short, long = WebhookEndpoint(URL, "s", 5.0), WebhookEndpoint(URL, "s", 20.0)
    assert shared_endpoint([short, None, long]) == WebhookEndpoint(URL, "s", 20.0)
    assert shared_endpoint([None]) is None


@pytest.mark.parametrize(
    ("webhook", "applier", "words"),
    [
        ({"url": "https://u:p@h/x", "secretRef": {"name": "s"}}, {}, "credentials"),
        ({"url": "ftp://h/x", "secretRef": {"name": "s"}}, {}, "http or https"),
        ({"url": "https://h/x"}, {}, "secretRef.name is required"),
        ({"url": "https://h/x", "secretRef": {"name": "s"}, "timeout": "2m"}, {}, "at most 60s"),
        ({"url": "https://h/x", "secretRef": {"name": "s"}}, {"quietPeriod": "5s"}, "quiet"),
        (
            {"url": "https://h/x", "secretRef": {"name": "s"}},
            {"kustomizationRef": {"name": "k", "namespace": "n"}},
            "exactly one",
        ),
    ],
)
def test_the_crd_rules_are_checked_again_by_the_product(
    webhook: dict[str, object], applier: dict[str, object], words: str
) -> None:
    """behaviour.md 1, T3: what the CRD's CEL refuses, the product refuses too."""
    view = parse_git_target(_target("team-a", webhook, **applier))
    assert view.applier is None and view.webhook is None
    assert words in view.applier_problem


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://127.0.0.1:8080/x", True),
        ("https://h/p@q", True),
        ("https://user@h/x", False),
        ("https://h:99999/x", False),
        ("https:///x", False),
        ("file:///etc/passwd", False),
    ],
)
def test_url_problem(url: str, ok: bool) -> None:
    assert (url_problem(url) is None) == ok


def test_the_check_names_a_missing_secret_then_a_missing_key_then_passes() -> None:
    """S2 for a webhook: the Secret in the GitTarget's namespace exists and holds hmacKey."""
    missing = check_webhook(SUBJECT, ENDPOINT, None)
    assert (missing.status, missing.reason) == ("False", SECRET_NOT_FOUND)
    assert "team-a/deploy-hook" in missing.message
    no_key = check_webhook(SUBJECT, ENDPOINT, {"token": b"x", "hmacKey": b""})
    assert (no_key.status, no_key.reason) == ("False", SECRET_KEY_NOT_FOUND)
    ok = check_webhook(SUBJECT, ENDPOINT, {"hmacKey": b"k"})
    assert (ok.status, ok.reason) == ("True", "Configured")
    bad = check_webhook(SUBJECT, WebhookEndpoint("https://a:b@h", "s", 1.0), {"hmacKey": b"k"})
    assert (bad.status, bad.reason) == ("False", INVALID_APPLIER)


def test_the_body_names_repository_branch_commit_reasons_uids_and_token() -> None:
    raw = body("https://git/r", "main", "c" * 40, {"Refusal": ["u2", "u1"]}, "tok")
    assert json.loads(raw) == {
        "apiVersion": "gitopsreverser.io/v1alpha1",
        "kind": "ApplyRequest",
        "repository": "https://git/r",
        "branch": "main",
        "commit": "c" * 40,
        "reasons": {"Refusal": ["u1", "u2"]},
        "token": "tok",
    }
    assert raw == body("https://git/r", "main", "c" * 40, {"Refusal": ["u1", "u2"]}, "tok")


def test_the_signature_covers_the_timestamp_and_the_raw_body() -> None:
    """An HMAC-SHA256 computed independently of the product's helper agrees with it, and a
    replayed body under another timestamp does not."""
    raw = b'{"a":1}'
    expected = hmac.new(b"key", b"1700000000." + raw, hashlib.sha256).hexdigest()
    assert signature(b"key", 1700000000, raw) == "sha256=" + expected
    assert signature(b"key", 1700000001, raw) != signature(b"key", 1700000000, raw)
    sent = headers(b"key", "tok", 1700000000, raw)
    assert sent[SIGNATURE_HEADER] == "sha256=" + expected
    assert (sent[TIMESTAMP_HEADER], sent[TOKEN_HEADER]) == ("1700000000", "tok")
    assert sent["Content-Type"] == "application/json"


@pytest.mark.parametrize(("status", "ok"), [(200, True), (204, True), (301, False), (500, False)])
def test_only_a_2xx_is_delivered(status: int, ok: bool) -> None:
    assert delivered(status) == ok


@pytest.mark.parametrize(
    ("kind", "owes"), [("Kustomization", True), ("Application", False), ("Webhook", False)]
)
def test_only_a_kustomization_is_owed_a_catch_up(kind: str, owes: bool) -> None:
    """A1, D7: the one rule that says which kinds catch up after our own pushes."""
    assert catches_up(kind) == owes


def test_a_webhook_record_is_never_owed_a_catch_up_but_is_owed_a_foreign_commit() -> None:
    """D7: ForeignCommit and Refusal like the others, never CatchUp."""
    record = owe_catch_up(Applier("Webhook"), commit="c1", uids=["u1"])
    record = owe_foreign_commit(record, commit="c2", uids=["u1"])
    record = owe_refusal(record, uid="u1", consents=True)
    assert record.owes() == {"ForeignCommit": frozenset({"u1"}), "Refusal": frozenset({"u1"})}


def test_the_endpoint_travels_in_the_request_and_the_published_config() -> None:
    """The URL, Secret name and timeout reach the dispatcher beside an identity-only ref."""
    request = ApplyRequest("t", "bk", "https://git/r", "main", "c", {"Refusal": ["u"]}, REF, 1.0)
    with_hook = dataclasses.replace(request, webhook=ENDPOINT)
    assert ApplyRequest.from_json(with_hook.to_json()) == with_hook
    assert "webhook" not in json.loads(request.to_json())
    plain = target_config(GitTargetUid("u"), "team-a", "t", "https://git/r", "main", path="a")
    config = dataclasses.replace(plain, applier=REF, webhook=ENDPOINT)
    assert TargetConfig.from_json(config.to_json()) == config
