"""The Go operator's six kinds (group ``configbutler.ai``), field by field, as ours.

Each function takes an upstream ``spec`` (a ``Fields``) and returns ours, taking every field
it maps; ``Context`` carries what one object's conversion needs from the others of the same
input (a GitProvider's signing, which ours holds per GitTarget). The fields upstream added in
0.42 to 0.50 are mapped in ``upstream_050``; docs/migrating.md's tables and these modules say
the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.cli import upstream_050 as added
from services.cli.upstream_fields import Fields, Refusal, name_of, put

GROUP = "configbutler.ai"


@dataclass
class Context:
    """What the conversion of one object reads from the rest of the input."""

    #: (namespace, GitProvider name) -> its upstream ``spec.commit.signing``.
    signing: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: The GitProviders whose signing some converted GitTarget took over.
    signing_used: set[tuple[str, str]] = field(default_factory=set)
    #: (namespace, GitProvider name) -> its ``commit.message.reconcileTemplate`` (ours: the
    #: GitTarget's, as upstream 0.50 moved it).
    reconcile: dict[tuple[str, str], str] = field(default_factory=dict)
    reconcile_used: set[tuple[str, str]] = field(default_factory=set)
    #: Lossless-but-worth-knowing remarks, printed on stderr.
    notes: list[str] = field(default_factory=list)


def git_provider(spec: Fields, ns: str, name: str, ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "url", spec.take("url"))
    if spec.has("secretRef"):
        out["secretRef"] = {"name": name_of(spec.sub("secretRef"), ("Secret",), "")}
    if spec.has("knownHostsRef"):
        ref = spec.sub("knownHostsRef")
        known: dict[str, Any] = {"name": ref.take("name")}
        put(known, "kind", ref.take("kind"))
        ref.rest()
        out["knownHostsRef"] = known
    put(out, "allowedBranches", spec.take("allowedBranches"))
    push = spec.sub("push")
    if push.has("commitWindow"):
        out["push"] = {"commitWindow": push.take("commitWindow")}
    push.rest()
    commit = spec.sub("commit")
    ours: dict[str, Any] = {}
    committer = commit.sub("committer")
    who = {k: committer.take(k) for k in ("name", "email") if committer.has(k)}
    committer.rest()
    put(ours, "committer", who or None)
    message = commit.sub("message")
    templates = {k: message.take(k) for k in ("eventTemplate", "groupTemplate") if message.has(k)}
    if message.has("reconcileTemplate"):
        ctx.reconcile[(ns, name)] = message.take("reconcileTemplate")
    message.rest()
    put(ours, "message", templates or None)
    if commit.has("signing"):
        signing = commit.sub("signing")
        ctx.signing[(ns, name)] = signing_of(signing)
    commit.rest()
    put(out, "commit", ours or None)
    return out


def signing_of(signing: Fields) -> dict[str, Any]:
    """Upstream's ``commit.signing`` as ours (the same shape, the Secret by name only)."""
    ours: dict[str, Any] = {}
    if signing.has("secretRef"):
        ours["secretRef"] = {"name": name_of(signing.sub("secretRef"), ("Secret",), "")}
    put(ours, "generateWhenMissing", signing.take("generateWhenMissing"))
    signing.rest()
    return ours


def git_target(spec: Fields, ns: str, ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("providerRef", "gitProviderRef"):
        if spec.has(key):
            provider = name_of(spec.sub(key), ("GitProvider",))
            out["providerRef"] = {"name": provider}
    put(out, "branch", spec.take("branch"))
    path = spec.take("path")
    if isinstance(path, str) and path not in (".", "/") and path.endswith("/"):
        path = path.rstrip("/")
    put(out, "path", path)
    if spec.has("clusterProviderRef"):
        cp = name_of(spec.sub("clusterProviderRef"), ("ClusterProvider",))
        out["clusterProviderRef"] = {"name": cp}
    prune = spec.sub("prune")
    if prune.has("mode"):
        out["prune"] = {"mode": prune.take("mode")}
    prune.rest()
    put(out, "encryption", encryption(spec.sub("encryption"), ctx))
    added.on_refusal(spec, out)
    spec.refuse(
        "allowedSourceNamespaces",
        "has no equivalent: ours mirrors a WatchRule's own namespace only",
    )
    added.suspend(spec, out)
    added.placement(spec, out)
    added.commit(spec, out)
    spec.rest()
    provider_key = (ns, out.get("providerRef", {}).get("name", ""))
    if provider_key in ctx.signing:
        out.setdefault("commit", {})["signing"] = ctx.signing[provider_key]
        ctx.signing_used.add(provider_key)
    if provider_key in ctx.reconcile:
        message = out.setdefault("commit", {}).setdefault("message", {})
        message.setdefault("reconcileTemplate", ctx.reconcile[provider_key])
        ctx.reconcile_used.add(provider_key)
    return out


def encryption(enc: Fields, ctx: Context) -> dict[str, Any] | None:
    """Upstream's SOPS settings as ours: static age recipients carry over; a Secret of age
    private keys (to derive or generate recipients from) has no equivalent."""
    provider = enc.take("provider")
    if provider not in (None, "sops"):
        raise Refusal(enc.at("provider"), f"must be sops, not {provider!r}")
    age = enc.sub("age")
    enabled = age.take("enabled", False)
    recipients = age.sub("recipients")
    keys = recipients.take("publicKeys") or []
    for key in ("extractFromSecret", "generateWhenMissing"):
        if recipients.take(key):
            raise Refusal(
                recipients.at(key),
                "has no equivalent: ours never holds an age private key; list the public "
                "recipients in publicKeys or a Secret (docs/sops.md)",
            )
    recipients.rest()
    age.rest()
    secret = enc.take("secretRef")
    enc.rest()
    if not enabled:
        return None
    if not keys:
        raise Refusal(
            age.at("recipients.publicKeys"), "is needed: ours encrypts for listed recipients"
        )
    if secret is not None:
        ctx.notes.append(
            f"{enc.path}.secretRef dropped: ours only encrypts, for the listed recipients"
        )
    return {"provider": "sops", "age": {"recipients": list(keys)}}


def rules(spec: Fields, ns: str | None) -> list[dict[str, Any]]:
    """``spec.rules`` of a WatchRule (``ns``, its namespace) or ClusterWatchRule (None)."""
    raw = spec.take("rules")
    if not isinstance(raw, list) or not raw:
        raise Refusal(spec.at("rules"), "needs at least one rule")
    out = []
    for i, item in enumerate(raw):
        rule = Fields(item, f"{spec.at('rules')}[{i}]")
        ours: dict[str, Any] = {}
        if not rule.has("apiGroups"):
            raise Refusal(
                rule.at("apiGroups"),
                'is required in ours: name the groups ("" is core, "*" every group)',
            )
        for key in ("apiGroups", "apiVersions", "resources", "operations"):
            put(ours, key, rule.take(key))
        if ns is not None:
            rule.refuse_unless(
                "sourceNamespace",
                ns,
                "has no equivalent: ours mirrors the WatchRule's own namespace only",
            )
        else:
            rule.refuse_unless("scope", "Cluster", "must be Cluster: ours has no scope field")
        added.object_selector(rule, ours)
        rule.rest()
        out.append(ours)
    return out


def watch_rule(spec: Fields, ns: str) -> dict[str, Any]:
    target = spec.sub("targetRef")
    target.refuse_unless(
        "namespace", ns, "must be the WatchRule's own namespace (a ClusterWatchRule's may differ)"
    )
    out: dict[str, Any] = {"targetRef": {"name": name_of(target, ("GitTarget",))}}
    out["rules"] = rules(spec, ns)
    target.rest()
    spec.rest()
    return out


def cluster_watch_rule(spec: Fields) -> dict[str, Any]:
    target = spec.sub("targetRef")
    namespace = target.take("namespace")
    if not namespace:
        raise Refusal(target.at("namespace"), "is required")
    out: dict[str, Any] = {
        "targetRef": {"name": name_of(target, ("GitTarget",)), "namespace": namespace}
    }
    target.rest()
    out["rules"] = rules(spec, None)
    spec.rest()
    return out


def cluster_provider(spec: Fields, ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if spec.has("kubeConfig"):
        kube = spec.sub("kubeConfig")
        kube.refuse("configMapRef", "has no equivalent: ours reads a Secret (secretRef)")
        ref = kube.sub("secretRef")
        name = ref.take("name")
        key = ref.take("key")
        if key is None:
            key = "value"
            ctx.notes.append(
                f"{ref.path}.key set to value (upstream tries value, then value.yaml; "
                "ours reads the one key named)"
            )
        ref.rest()
        kube.rest()
        out["kubeConfig"] = {"secretRef": {"name": name, "key": key}}
    if spec.has("allowedNamespaces"):
        matcher = spec.sub("allowedNamespaces")
        access: dict[str, Any] = {}
        put(access, "names", matcher.take("names"))
        put(access, "selector", matcher.take("selector"))
        matcher.rest()
        out["accessFrom"] = access
    spec.refuse_unless(
        "allowSourceNamespaceOverride",
        False,
        "has no equivalent: ours mirrors a WatchRule's own namespace only",
    )
    for key in ("qps", "burst"):
        spec.refuse(key, "has no equivalent: ours does not throttle a cluster's client")
    spec.refuse(
        "attribution",
        "cannot be converted alone: ours also needs spec.attribution.tokenSecretRef "
        "(the audit webhook's bearer token, docs/attribution.md); add the block by hand",
    )
    spec.rest()
    return out


def commit_request(spec: Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("targetRef", "gitTargetRef"):
        if spec.has(key):
            out["targetRef"] = {"name": name_of(spec.sub(key), ("GitTarget",))}
    put(out, "message", spec.take("message"))
    put(out, "closeDelaySeconds", spec.take("closeDelaySeconds"))
    spec.rest()
    return out
