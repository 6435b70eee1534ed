"""The GitTarget CRD's ``spec.applier.webhook`` (D7, T3) through the sandbox's CRD validator.

The validator applies the schema's defaults, OpenAPI constraints and CEL rules as
kube-apiserver does (see ``test_own_crds.py``): a webhook is the third kind of applier, exactly
one kind is named, its URL is http or https without credentials, its timeout is bounded and
defaults to 10s, and a quietPeriod (which times a CatchUp) is refused with it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.unit.test_own_crds import _check, _example, _refused_with, schemas

__all__ = ["schemas"]  # the module fixture, shared

Schemas = dict[str, dict[str, Any]]
HOOK: dict[str, Any] = {
    "url": "https://deploy.example.com/hooks/apply?team=a",
    "secretRef": {"name": "deploy-hook"},
    "timeout": "5s",
}


def _target(**webhook: Any) -> dict[str, Any]:
    target = _example("GitTarget")
    target["spec"]["applier"] = {"webhook": {**HOOK, **webhook}}
    return target


def test_a_webhook_applier_passes_untouched(schemas: Schemas) -> None:
    """D7: url, secretRef and timeout, with a clusterProviderRef, is a valid applier."""
    target = _target()
    target["spec"]["applier"]["clusterProviderRef"] = {"name": "hub"}
    checked = _check(schemas, target)
    assert checked.errors == []
    assert checked.obj["spec"]["applier"]["webhook"] == HOOK


def test_the_timeout_defaults_to_ten_seconds(schemas: Schemas) -> None:
    """D7: the timeout is optional; the schema fills in 10s."""
    target = _target()
    del target["spec"]["applier"]["webhook"]["timeout"]
    checked = _check(schemas, target)
    assert checked.errors == []
    assert checked.obj["spec"]["applier"]["webhook"]["timeout"] == "10s"


@pytest.mark.parametrize("other", ["kustomizationRef", "applicationRef"])
def test_a_webhook_and_a_ref_are_not_both_allowed(schemas: Schemas, other: str) -> None:
    """behaviour.md 1 (CEL): exactly one of kustomizationRef, applicationRef and webhook."""
    target = _target()
    target["spec"]["applier"][other] = {"name": "apps", "namespace": "apps"}
    _refused_with(
        schemas,
        target,
        "spec.applier",
        "spec.applier must name exactly one of kustomizationRef, applicationRef and webhook",
    )


def test_quiet_period_is_refused_with_a_webhook(schemas: Schemas) -> None:
    """D7: a webhook is never owed a CatchUp, so the period that times one is refused."""
    target = _target()
    target["spec"]["applier"]["quietPeriod"] = "30s"
    _refused_with(
        schemas,
        target,
        "spec.applier",
        "spec.applier.quietPeriod only applies to a kustomizationRef; remove it for a webhook",
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://bot:hunter2@deploy.example.com/hook",
        "http://token@deploy.example.com",
        "HTTPS://user@deploy.example.com/a@b",
    ],
)
def test_credentials_in_the_url_are_refused(schemas: Schemas, url: str) -> None:
    """T3: credentials are never part of a URL; the key belongs in the Secret."""
    _refused_with(
        schemas,
        _target(url=url),
        "spec.applier.webhook.url",
        "spec.applier.webhook.url must not carry credentials (user:password@); "
        "put the key in the Secret",
    )


@pytest.mark.parametrize("url", ["http://sink.test:8080", "https://h/p/a@b?x=@#@"])
def test_an_at_sign_after_the_host_is_not_credentials(schemas: Schemas, url: str) -> None:
    """Only ``user@`` before the host is userinfo; an ``@`` in the path or query is not."""
    assert _check(schemas, _target(url=url)).errors == []


URL_MESSAGE = "spec.applier.webhook.url must be an http or https URL with a host"
TIMEOUT_MESSAGE = "spec.applier.webhook.timeout must be more than 0s and at most 60s"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("url", "ftp://deploy.example.com/hook", URL_MESSAGE),
        ("url", "deploy.example.com/hook", URL_MESSAGE),
        ("url", "https://", URL_MESSAGE),
        ("url", "https:///x", URL_MESSAGE),
        ("timeout", "0s", TIMEOUT_MESSAGE),
        ("timeout", "61s", TIMEOUT_MESSAGE),
        ("timeout", "2m", TIMEOUT_MESSAGE),
    ],
)
def test_an_http_url_with_a_host_and_a_bounded_timeout(
    schemas: Schemas, field: str, value: str, message: str
) -> None:
    """D7: the request is an HTTP POST to a host, and one POST takes more than 0s and at
    most 60s."""
    _refused_with(schemas, _target(**{field: value}), f"spec.applier.webhook.{field}", message)


def test_a_webhook_needs_a_secret(schemas: Schemas) -> None:
    """D7: every request is signed, so the Secret is required."""
    target = _target()
    del target["spec"]["applier"]["webhook"]["secretRef"]
    checked = _check(schemas, target)
    assert [e.field for e in checked.errors if e.reason == "FieldValueRequired"] == [
        "spec.applier.webhook.secretRef"
    ]


def test_the_status_names_a_webhook_applier(schemas: Schemas) -> None:
    """status.applier.kind takes Webhook beside Kustomization and Application."""
    target = _target()
    target["status"]["applier"]["kind"] = "Webhook"
    assert _check(schemas, target).errors == []
