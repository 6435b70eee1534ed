"""A GitTarget's ``spec.applier`` (A-rules, D7), read once from the API's JSON: which applier it
names and where, its quiet period, and its webhook endpoint when it is one; or why the
reference cannot be used (the CRD's CEL rules again, for an object stored before a rule was
added). The fields and what each allows come from the kinds' table (``appliers.KINDS``).
"""

from __future__ import annotations

from shared.model import defaults
from shared.model.appliers import KINDS, KindRules
from shared.model.config import ApplierRef
from shared.model.crd_meta import Raw
from shared.model.crd_meta import as_map as _map
from shared.model.duration import DurationError, parse_duration
from shared.model.webhook import MAX_TIMEOUT_S, WebhookEndpoint, url_problem


def parse_applier(
    spec: Raw, own_cluster: str, namespace: str
) -> tuple[ApplierRef | None, float, str, WebhookEndpoint | None]:
    """``spec.applier`` as a reference, the GitTarget's quiet period in seconds, why the
    reference cannot be used ("" when it can), and the webhook endpoint when it names one.
    Absent: None, the default period, "" and None. The fields and what each allows come from
    the kinds' table (``KINDS``)."""
    applier = _map(spec.get("applier"))
    if not applier:
        return None, defaults.QUIET_PERIOD_S, "", None
    named = [rules for rules in KINDS.values() if applier.get(rules.spec_field)]
    problem = _applier_problem(applier, named)
    if problem:
        return None, defaults.QUIET_PERIOD_S, problem, None
    try:
        quiet = parse_duration(str(applier.get("quietPeriod", defaults.QUIET_PERIOD)))
    except DurationError as err:
        return None, defaults.QUIET_PERIOD_S, f"spec.applier.quietPeriod: {err}", None
    cluster = str(_map(applier.get("clusterProviderRef")).get("name") or own_cluster)
    rules = named[0]
    if not rules.names_object:  # an endpoint in the GitTarget's namespace (D7)
        endpoint, problem = _webhook(_map(applier[rules.spec_field]))
        if endpoint is None:
            return None, defaults.QUIET_PERIOD_S, problem, None
        ref = ApplierRef(rules.kind, namespace, endpoint.name, cluster)
        return ref, quiet.total_seconds(), "", endpoint
    target = _map(applier[rules.spec_field])
    name, ref_namespace = str(target.get("name", "")), str(target.get("namespace", ""))
    return ApplierRef(rules.kind, ref_namespace, name, cluster), quiet.total_seconds(), "", None


def _applier_problem(applier: Raw, named: list[KindRules]) -> str:
    """Why ``spec.applier``'s fields cannot be used together ("" when they can)."""
    if len(named) != 1:
        fields = [rules.spec_field for rules in KINDS.values()]
        listed = ", ".join(fields[:-1]) + " and " + fields[-1]
        return f"spec.applier must name exactly one of {listed}"
    if not named[0].quiet_period and "quietPeriod" in applier:
        allowed = " or a ".join(r.spec_field for r in KINDS.values() if r.quiet_period)
        return f"spec.applier.quietPeriod only applies to a {allowed}"
    return ""


def _webhook(raw: Raw) -> tuple[WebhookEndpoint | None, str]:
    """``spec.applier.webhook`` (D7), or why it cannot be used (the CRD's rules again)."""
    url = str(raw.get("url", ""))
    problem = url_problem(url)
    secret = str(_map(raw.get("secretRef")).get("name") or "")
    if problem is None and not secret:
        problem = "spec.applier.webhook.secretRef.name is required"
    try:
        timeout = parse_duration(
            str(raw.get("timeout") or defaults.WEBHOOK_TIMEOUT)
        ).total_seconds()
    except DurationError as err:
        problem = problem or f"spec.applier.webhook.timeout: {err}"
        timeout = defaults.WEBHOOK_TIMEOUT_S
    if problem is None and not 0 < timeout <= MAX_TIMEOUT_S:
        problem = (
            f"spec.applier.webhook.timeout must be more than 0s and at most {MAX_TIMEOUT_S:g}s"
        )
    if problem is not None:
        return None, problem
    return WebhookEndpoint(url, secret, timeout), ""
