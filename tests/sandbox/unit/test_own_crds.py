"""The project's own CRDs accept what behaviour.md section 1 allows and refuse the rest.

Each object goes through the sandbox's CRD validator (``sandbox.kube.schema.check``), which
applies the schema's defaults, its OpenAPI constraints and its CEL rules as kube-apiserver
does. A complete example of each kind passes untouched; every rule the CRDs carry refuses a
bad object with its own message; the spec's defaults are filled in. The well-formedness of
the definitions themselves is pinned in ``test_own_crd_structure.py``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox import paths
from sandbox.kube import schema
from shared.model import defaults

API_VERSION = "gitopsreverser.io/v1alpha1"
CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "Succeeded",
    "message": "",
    "lastTransitionTime": "2026-11-29T10:00:00Z",
    "observedGeneration": 1,
}
GIT_PROVIDER: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "GitProvider",
    "metadata": {"name": "repo", "namespace": "team-a"},
    "spec": {
        "url": "https://git.example.com/org/config.git",
        "secretRef": {"name": "repo-credentials"},
        "allowedBranches": ["main", "env/*"],
        "push": {"commitWindow": "1m30s"},
        "commit": {
            "committer": {"name": "Bot", "email": "bot@example.com"},
            "message": {"eventTemplate": "{{.Operation}} {{.Name}}", "groupTemplate": "{{.Count}}"},
        },
        "receiver": {"type": "gitea", "secretRef": {"name": "webhook-token"}},
    },
    "status": {
        "observedGeneration": 1,
        "conditions": [CONDITION],
        "receiver": {"webhookPath": "/hook/" + "ab" * 32},
    },
}
CLUSTER_PROVIDER: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "ClusterProvider",
    "metadata": {"name": "hub"},
    "spec": {
        "kubeConfig": {"secretRef": {"name": "hub-kubeconfig", "key": "value.yaml"}},
        "accessFrom": {
            "names": ["team-a"],
            "selector": {
                "matchLabels": {"tenant": "a"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
            },
        },
        "crossNamespaceAppliers": [
            {"namespace": "argocd", "accessFrom": {"names": ["team-a"]}},
            {"namespace": "flux-system", "accessFrom": {"selector": {}}},
        ],
        "clusterScoped": {"accessFrom": {"names": ["team-a"]}},
    },
    "status": {"observedGeneration": 1, "conditions": [CONDITION]},
}
GIT_TARGET: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "GitTarget",
    "metadata": {"name": "apps", "namespace": "team-a"},
    "spec": {
        "providerRef": {"name": "repo"},
        "branch": "main",
        "path": "clusters/prod/apps",
        "clusterProviderRef": {"name": "hub"},
        "prune": {"mode": "Always"},
        "onRefusal": "Reapply",
        "suspend": False,
        "commit": {"signing": {"secretRef": {"name": "signing"}, "generateWhenMissing": True}},
        "sensitive": [{"group": "example.com", "kind": "Widget"}, {"group": "", "kind": "*"}],
        "encryption": {
            "provider": "sops",
            "age": {
                "recipients": ["age1" + "q" * 58],
                "recipientsSecretRef": {"name": "sops-recipients", "key": "recipients"},
            },
        },
        "applier": {
            "kustomizationRef": {"name": "apps", "namespace": "flux-system"},
            "clusterProviderRef": {"name": "hub"},
            "quietPeriod": "45s",
        },
    },
    "status": {
        "observedGeneration": 1,
        "conditions": [CONDITION, {**CONDITION, "type": "ApplierConfigured"}],
        "signingPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleExample",
        "lastHandledReconcileAt": "2026-12-06T09:00:00Z",
        "remote": {
            "revision": "0123456789abcdef0123456789abcdef01234567",
            "lastVerifiedAt": "2026-11-29T10:00:09Z",
            "verifiedBy": "Push",
        },
        "applier": {
            "kind": "Kustomization",
            "name": "apps",
            "namespace": "flux-system",
            "clusterProvider": "hub",
            "lastRequest": {
                "reasons": ["ForeignCommit", "CatchUp"],
                "commit": "0123456789abcdef0123456789abcdef01234567",
                "token": "req-7f3a",
                "sentAt": "2026-11-29T10:00:00Z",
                "finishedAt": "2026-11-29T10:00:09Z",
                "outcome": "Delivered",
                "message": "lastHandledReconcileAt carries the stamp",
            },
        },
    },
}
WATCH_RULE: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "WatchRule",
    "metadata": {"name": "config", "namespace": "team-a"},
    "spec": {
        "targetRef": {"name": "apps"},
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
                "operations": ["CREATE", "UPDATE", "DELETE"],
            },
            {"apiGroups": ["apps"], "resources": ["*"], "operations": ["*"]},
        ],
    },
    "status": {"observedGeneration": 1, "conditions": [CONDITION]},
}
CLUSTER_WATCH_RULE: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "ClusterWatchRule",
    "metadata": {"name": "cluster-rbac"},
    "spec": {
        "targetRef": {"name": "apps", "namespace": "team-a"},
        "rules": [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "apiVersions": ["v1"],
                "resources": ["clusterroles", "clusterrolebindings"],
                "operations": ["CREATE", "UPDATE", "DELETE"],
            },
            {"apiGroups": [""], "resources": ["namespaces"], "operations": ["*"]},
        ],
    },
    "status": {"observedGeneration": 1, "conditions": [CONDITION]},
}
EXAMPLES = {
    "ClusterWatchRule": CLUSTER_WATCH_RULE,
    "GitProvider": GIT_PROVIDER,
    "ClusterProvider": CLUSTER_PROVIDER,
    "GitTarget": GIT_TARGET,
    "WatchRule": WATCH_RULE,
}


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = yaml.safe_load(handle)
    return loaded


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    """The openAPIV3Schema of each CRD the chart ships, by kind."""
    crds = [_load(path) for path in paths.own_crd_files()]
    return {
        crd["spec"]["names"]["kind"]: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for crd in crds
    }


def _example(kind: str) -> dict[str, Any]:
    return copy.deepcopy(EXAMPLES[kind])


def _check(
    schemas: dict[str, dict[str, Any]],
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
) -> schema.Checked:
    return schema.check(schemas[obj["kind"]], obj, old)


def _fields(checked: schema.Checked) -> list[str]:
    """The fields the errors name, leaving out the whole-object note.

    When a type, required or enum error makes the object unfit for CEL, kube-apiserver skips
    the rules and adds one error on the object itself (field ``<nil>``) saying so
    (apiextensions-apiserver customResourceStrategy, ``hasBlockingErr``).
    """
    return [error.field for error in checked.errors if error != schema.CEL_SKIPPED]


def _refused_with(
    schemas: dict[str, dict[str, Any]],
    obj: dict[str, Any],
    where: str,
    message: str,
    old: dict[str, Any] | None = None,
) -> None:
    """The object is refused at ``where`` by a CEL rule carrying ``message``.

    kube-apiserver words a failed rule as ``field.Invalid`` at the rule's schema node, whose
    message body is ``Invalid value: "<type>": <rule message>``
    (k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel/validation.go).
    """
    checked = _check(schemas, obj, old)
    found = [(e.field, e.reason) for e in checked.errors if e.message.endswith(message)]
    assert found == [(where, "FieldValueInvalid")], checked.errors


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_a_complete_example_passes_untouched(schemas: dict[str, dict[str, Any]], kind: str) -> None:
    """behaviour.md section 1: every field of the kind, set, is valid and nothing is pruned."""
    checked = _check(schemas, _example(kind))
    assert checked.errors == []
    assert checked.unknown_fields == []
    assert checked.obj == EXAMPLES[kind]


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_an_unchanged_update_passes_the_transition_rules(
    schemas: dict[str, dict[str, Any]], kind: str
) -> None:
    """Transition rules (self == oldSelf) hold when the identity fields do not move.

    https://kubernetes.io/blog/2022/09/29/enforce-immutability-using-cel
    """
    checked = _check(schemas, _example(kind), old=_example(kind))
    assert checked.errors == []


def test_git_provider_defaults(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1: commitWindow defaults to 5s, the committer to GitOps Reverser.

    Nested defaults apply under a parent defaulted to {}: kube-apiserver's structural
    defaulting sets a missing property's default, then recurses into it
    (kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/
    defaulting/algorithm.go, ``Default``).
    """
    provider = _example("GitProvider")
    for optional in ("push", "commit", "receiver", "secretRef"):
        del provider["spec"][optional]
    checked = _check(schemas, provider)
    assert checked.errors == []
    assert checked.obj["spec"]["push"] == {"commitWindow": "5s"}
    assert checked.obj["spec"]["commit"] == {
        "committer": {"name": "GitOps Reverser", "email": "noreply@gitopsreverser.io"}
    }
    assert "receiver" not in checked.obj["spec"]


def test_git_target_defaults(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1: clusterProviderRef default, prune.mode OnEvent, onRefusal None.

    quietPeriod has no schema default (the seed: it "loses its schema default"), so an
    omitted one stays omitted and the product reads it as 30s.
    """
    target = _example("GitTarget")
    for optional in ("clusterProviderRef", "prune", "onRefusal"):
        del target["spec"][optional]
    del target["spec"]["applier"]["quietPeriod"]
    checked = _check(schemas, target)
    assert checked.errors == []
    assert checked.obj["spec"]["clusterProviderRef"] == {"name": "default"}
    assert checked.obj["spec"]["prune"] == {"mode": "OnEvent"}
    assert checked.obj["spec"]["onRefusal"] == "None"
    assert "quietPeriod" not in checked.obj["spec"]["applier"]


def test_a_git_target_without_an_applier_is_valid(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1: spec.applier is optional (absent = nobody is asked to apply)."""
    target = _example("GitTarget")
    del target["spec"]["applier"]
    assert _check(schemas, target).errors == []


def test_cluster_provider_spec_may_be_empty(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1: no kubeConfig = the local cluster; no accessFrom = admits nothing.

    ``selector: {}`` must survive validation unchanged, since it means "every namespace".
    """
    provider = _example("ClusterProvider")
    provider["spec"] = {"accessFrom": {"selector": {}}}
    checked = _check(schemas, provider)
    assert checked.errors == []
    assert checked.obj["spec"] == {"accessFrom": {"selector": {}}}


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([{"accessFrom": {"selector": {}}}], "namespace"),  # required
        ([{"namespace": "argocd"}], "accessFrom"),  # required
        ([{"namespace": "Not_A_Namespace", "accessFrom": {}}], "namespace"),  # pattern
        (
            [{"namespace": "argocd", "accessFrom": {}}] * 2,  # list-type map: one per namespace
            "crossNamespaceAppliers[1]",
        ),
    ],
    ids=["no-namespace", "no-access-from", "bad-namespace", "duplicate-namespace"],
)
def test_cross_namespace_appliers_are_checked(
    schemas: dict[str, dict[str, Any]], entries: list[dict[str, Any]], expected: str
) -> None:
    """T2: each ``spec.crossNamespaceAppliers[]`` entry names one namespace (a valid name, at
    most one entry each) and an ``accessFrom``."""
    provider = _example("ClusterProvider")
    provider["spec"]["crossNamespaceAppliers"] = entries
    errors = _check(schemas, provider).errors
    assert errors and any(expected in str(e) for e in errors), errors


@pytest.mark.parametrize("both", [True, False], ids=["both", "neither"])
def test_applier_names_exactly_one_ref(schemas: dict[str, dict[str, Any]], both: bool) -> None:
    """behaviour.md 1 (CEL): exactly one of kustomizationRef and applicationRef."""
    target = _example("GitTarget")
    applier = target["spec"]["applier"]
    del applier["quietPeriod"]
    if both:
        applier["applicationRef"] = {"name": "apps", "namespace": "argocd"}
    else:
        del applier["kustomizationRef"]
    _refused_with(
        schemas,
        target,
        "spec.applier",
        "spec.applier must name exactly one of kustomizationRef, applicationRef and webhook",
    )


def test_quiet_period_is_refused_with_an_application(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1 (CEL): quietPeriod times the CatchUp, which Argo CD is never asked."""
    target = _example("GitTarget")
    applier = target["spec"]["applier"]
    applier["applicationRef"] = applier.pop("kustomizationRef")
    _refused_with(
        schemas,
        target,
        "spec.applier",
        "spec.applier.quietPeriod only applies to a kustomizationRef; "
        "remove it for an applicationRef",
    )


def test_an_application_without_quiet_period_is_valid(schemas: dict[str, dict[str, Any]]) -> None:
    """The Argo CD applier shape: applicationRef alone passes both applier rules."""
    target = _example("GitTarget")
    target["spec"]["applier"] = {"applicationRef": {"name": "apps", "namespace": "argocd"}}
    assert _check(schemas, target).errors == []


@pytest.mark.parametrize(
    ("kind", "field", "value", "message"),
    [
        (
            "GitProvider",
            "url",
            "https://git.example.com/org/other.git",
            "spec.url is immutable; create a new GitProvider for another repository",
        ),
        (
            "GitTarget",
            "providerRef",
            {"name": "other"},
            "spec.providerRef is immutable; create a new GitTarget for another GitProvider",
        ),
        (
            "GitTarget",
            "branch",
            "release",
            "spec.branch is immutable; create a new GitTarget for another branch",
        ),
        (
            "GitTarget",
            "path",
            "clusters/staging/apps",
            "spec.path is immutable; create a new GitTarget for another folder",
        ),
        (
            "GitTarget",
            "clusterProviderRef",
            {"name": "default"},
            "spec.clusterProviderRef is immutable; create a new GitTarget for another cluster",
        ),
    ],
)
def test_identity_fields_are_immutable(
    schemas: dict[str, dict[str, Any]], kind: str, field: str, value: Any, message: str
) -> None:
    """behaviour.md 1: url, providerRef, branch, path, clusterProviderRef never change.

    A transition rule sees the stored value as oldSelf
    (https://kubernetes.io/blog/2022/09/29/enforce-immutability-using-cel); on create there
    is no old object and the rule is skipped, which the complete-example test shows.
    """
    old = _example(kind)
    new = _example(kind)
    new["spec"][field] = value
    assert _check(schemas, new).errors == []
    _refused_with(schemas, new, f"spec.{field}", message, old=old)


@pytest.mark.parametrize("path", ["/clusters/prod", "/"])
def test_path_must_be_relative(schemas: dict[str, dict[str, Any]], path: str) -> None:
    """behaviour.md 1 (CEL): spec.path is repo-relative, no leading '/'."""
    target = _example("GitTarget")
    target["spec"]["path"] = path
    _refused_with(
        schemas,
        target,
        "spec.path",
        "spec.path must be relative to the repository root: no leading '/'",
    )


@pytest.mark.parametrize("path", ["..", "../elsewhere", "apps/..", "apps/../../etc"])
def test_path_has_no_parent_segment(schemas: dict[str, dict[str, Any]], path: str) -> None:
    """behaviour.md 1 (CEL): spec.path has no '..' segment, wherever it stands."""
    target = _example("GitTarget")
    target["spec"]["path"] = path
    _refused_with(
        schemas, target, "spec.path", "spec.path must stay inside the repository: no '..' segment"
    )


@pytest.mark.parametrize("path", [".", "apps", "apps/v1..2", "..hidden/x", "a/b/"])
def test_paths_that_stay_inside_pass(schemas: dict[str, dict[str, Any]], path: str) -> None:
    """A '..' inside a name is not a parent segment; '.' names the repository root."""
    target = _example("GitTarget")
    target["spec"]["path"] = path
    assert _check(schemas, target).errors == []


@pytest.mark.parametrize(
    "receiver_type", ["github", "gitea", "gitlab", "bitbucket", "generic-hmac"]
)
def test_every_receiver_type_is_accepted(
    schemas: dict[str, dict[str, Any]], receiver_type: str
) -> None:
    """behaviour.md 1 and R2: the five webhook formats the receiver verifies."""
    provider = _example("GitProvider")
    provider["spec"]["receiver"]["type"] = receiver_type
    assert _check(schemas, provider).errors == []


def test_an_unknown_receiver_type_is_refused(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1: receiver.type is an enum; the error names the field."""
    provider = _example("GitProvider")
    provider["spec"]["receiver"]["type"] = "forgejo"
    checked = _check(schemas, provider)
    assert _fields(checked) == ["spec.receiver.type"]


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        ("GitProvider", ("push", "commitWindow"), "5 seconds"),
        ("GitTarget", ("applier", "quietPeriod"), "30"),
        ("GitTarget", ("prune", "mode"), "Sometimes"),
        ("GitTarget", ("onRefusal",), "EmptyCommit"),
    ],
)
def test_enums_and_durations_refuse_other_values(
    schemas: dict[str, dict[str, Any]], kind: str, field: tuple[str, ...], value: str
) -> None:
    """Durations follow Go's syntax; prune.mode and onRefusal take only their values.

    The seed turned onRefusal: PushEmptyCommit into Reapply for a named applier; P11 keeps
    PushEmptyCommit for a GitTarget without one (``test_own_crds_controls.py``).
    """
    obj = _example(kind)
    parent = obj["spec"]
    for name in field[:-1]:
        parent = parent[name]
    parent[field[-1]] = value
    checked = _check(schemas, obj)
    assert _fields(checked) == ["spec." + ".".join(field)]


def test_a_required_field_is_enforced(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1: allowedBranches is required on a GitProvider."""
    provider = _example("GitProvider")
    del provider["spec"]["allowedBranches"]
    checked = _check(schemas, provider)
    assert _fields(checked) == ["spec.allowedBranches"]


def test_a_condition_status_outside_the_enum_is_refused(
    schemas: dict[str, dict[str, Any]],
) -> None:
    """metav1.Condition: status is True, False or Unknown."""
    rule = _example("WatchRule")
    rule["status"]["conditions"][0]["status"] = "Yes"
    checked = _check(schemas, rule)
    assert _fields(checked) == ["status.conditions[0].status"]


def test_a_watch_rule_names_no_subresource(schemas: dict[str, dict[str, Any]]) -> None:
    """behaviour.md 1: resources are plural names or '*', so 'deployments/scale' is refused."""
    rule = _example("WatchRule")
    rule["spec"]["rules"][0]["resources"] = ["deployments/scale"]
    checked = _check(schemas, rule)
    assert _fields(checked) == ["spec.rules[0].resources[0]"]


@pytest.mark.parametrize(
    "url",
    [
        "http://alice:s3cretPW-alice@127.0.0.1:18103/sandbox/priv2.git",
        "https://ghp_token@github.com/o/r.git",
        "ssh://git:hunter2@host/r.git",
    ],
)
def test_credentials_in_a_git_provider_url_are_refused(
    schemas: dict[str, dict[str, Any]], url: str
) -> None:
    """T3: credentials belong in the Secret, never in ``spec.url``."""
    provider = _example("GitProvider")
    provider["spec"]["url"] = url
    _refused_with(
        schemas,
        provider,
        "spec.url",
        "spec.url must not carry credentials (user:password@ or a token before the host); "
        "put them in the Secret named by spec.secretRef",
    )


@pytest.mark.parametrize(
    "url", ["ssh://git@host:22/r.git", "git@github.com:o/r.git", "https://h/p/a@b"]
)
def test_an_ssh_user_name_in_a_git_provider_url_passes(
    schemas: dict[str, dict[str, Any]], url: str
) -> None:
    provider = _example("GitProvider")
    provider["spec"]["url"] = url
    assert _check(schemas, provider).errors == []


@pytest.mark.parametrize("template", ["{operation} {nope}", "{name:>20}", "at {path}"])
def test_an_old_syntax_template_is_refused(
    schemas: dict[str, dict[str, Any]], template: str
) -> None:
    """The CRD's coarse check (issue 15): the old ``{field}`` syntax is refused at admission
    with the Go spelling to use (``shared.model.templates`` refuses the same)."""
    provider = _example("GitProvider")
    provider["spec"]["commit"]["message"]["eventTemplate"] = template
    _refused_with(
        schemas,
        provider,
        "spec.commit.message.eventTemplate",
        "eventTemplate uses the old {field} syntax, which is no longer read; write Go template "
        "syntax, e.g. {{.Name}}",
    )


@pytest.mark.parametrize("template", ["{{", "{{.Count}} {{.Count", "{{.Count}", "a {{ b }"])
def test_an_unclosed_action_is_refused(schemas: dict[str, dict[str, Any]], template: str) -> None:
    provider = _example("GitProvider")
    provider["spec"]["commit"]["message"]["groupTemplate"] = template
    _refused_with(
        schemas,
        provider,
        "spec.commit.message.groupTemplate",
        "groupTemplate has a {{ that no }} closes",
    )


def test_the_built_in_templates_pass(schemas: dict[str, dict[str, Any]]) -> None:
    provider = _example("GitProvider")
    provider["spec"]["commit"]["message"] = {
        "eventTemplate": defaults.EVENT_TEMPLATE,
        "groupTemplate": defaults.GROUP_TEMPLATE,
    }
    assert _check(schemas, provider).errors == []


def test_a_template_the_api_server_admits_may_still_be_bad(
    schemas: dict[str, dict[str, Any]],
) -> None:
    """CEL checks only the delimiters: an unknown field passes admission, and the watcher
    refuses it (tests/integration/watcher/test_commit_templates.py)."""
    provider = _example("GitProvider")
    provider["spec"]["commit"]["message"]["eventTemplate"] = '{{.Nope}} {{ "}}" }}'
    assert _check(schemas, provider).errors == []


def test_a_cluster_watch_rule_names_its_targets_namespace(
    schemas: dict[str, dict[str, Any]],
) -> None:
    """P6: a ClusterWatchRule is cluster-scoped, so its GitTarget is named with a namespace."""
    rule = _example("ClusterWatchRule")
    del rule["spec"]["targetRef"]["namespace"]
    assert _fields(_check(schemas, rule)) == ["spec.targetRef.namespace"]


def test_signing_needs_a_secret(schemas: dict[str, dict[str, Any]]) -> None:
    """P6: spec.commit.signing names the Secret holding (or to hold) the key."""
    target = _example("GitTarget")
    target["spec"]["commit"]["signing"] = {"generateWhenMissing": True}
    assert _fields(_check(schemas, target)) == ["spec.commit.signing.secretRef"]


def test_encryption_names_age_recipients(schemas: dict[str, dict[str, Any]]) -> None:
    """P3: spec.encryption.age needs a recipient list or a Secret; provider defaults to sops,
    the Secret's key to ``recipients``; a key that is not an age public key is refused."""
    target = _example("GitTarget")
    target["spec"]["encryption"] = {"age": {"recipientsSecretRef": {"name": "keys"}}}
    checked = _check(schemas, target)
    assert checked.errors == []
    assert checked.obj["spec"]["encryption"] == {
        "provider": "sops",
        "age": {"recipientsSecretRef": {"name": "keys", "key": "recipients"}},
    }
    target["spec"]["encryption"] = {"age": {"recipients": []}}
    _refused_with(
        schemas,
        target,
        "spec.encryption.age",
        "spec.encryption.age needs recipients or recipientsSecretRef",
    )
    target["spec"]["encryption"] = {"age": {"recipients": ["AGE-SECRET-KEY-1XYZ"]}}
    assert _fields(_check(schemas, target)) == ["spec.encryption.age.recipients[0]"]
