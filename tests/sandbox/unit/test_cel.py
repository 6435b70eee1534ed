"""CRD CEL rules (x-kubernetes-validations) are evaluated as kube-apiserver evaluates them.

The Flux CRDs' own rules fire with their own messages; small inline schemas pin transition
rules (``oldSelf``), ratcheting, optional oldSelf, messages, reasons, field paths, the
Kubernetes CEL library functions, value conversion and how failures to compile or evaluate a
rule are reported. Behaviour follows apiextensions-apiserver
``pkg/apiserver/schema/cel/validation.go`` and
https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation-rules.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from sandbox.kube import cel
from sandbox.kube import fielderrors as fe
from sandbox.kube.schema import FieldError, check

Schema = dict[str, Any]


#: An optionalOldSelf transition rule: once "Done", always "Done".
DONE_IS_FINAL = "!oldSelf.hasValue() || oldSelf.value() != 'Done' || self == 'Done'"


KUSTOMIZATION: dict[str, Any] = {
    "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
    "kind": "Kustomization",
    "metadata": {"name": "apps", "namespace": "flux-system"},
    "spec": {"interval": "10m", "prune": True, "sourceRef": {"kind": "GitRepository", "name": "r"}},
}
RECEIVER: dict[str, Any] = {
    "apiVersion": "notification.toolkit.fluxcd.io/v1",
    "kind": "Receiver",
    "metadata": {"name": "hook", "namespace": "flux-system"},
    "spec": {
        "type": "github",
        "resources": [{"kind": "GitRepository", "name": "r"}],
        "secretRef": {"name": "token"},
    },
}
KUBECONFIG_RULE = (
    "exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified"
)


def _with(base: Mapping[str, Any], **spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(dict(base))
    obj["spec"].update(spec)
    return obj


@pytest.mark.parametrize(
    "kube_config",
    [{}, {"secretRef": {"name": "a"}, "configMapRef": {"name": "b"}}],
    ids=["neither", "both"],
)
def test_kustomization_kube_config_rules_fire(crds: dict[str, Schema], kube_config: Any) -> None:
    """The Kustomization CRD's two rules on spec.kubeConfig: one error, at that path, with the
    rule's message; the server's full wording prefixes ``Invalid value: "object"``
    (validation.go fieldErrorForReason with the schema type as the value)."""
    errors = check(crds["Kustomization"], _with(KUSTOMIZATION, kubeConfig=kube_config)).errors
    assert errors == [
        FieldError(
            "spec.kubeConfig",
            fe.INVALID,
            KUBECONFIG_RULE,
            f'Invalid value: "object": {KUBECONFIG_RULE}',
        )
    ]
    assert errors[0].status_message == f'Invalid value: "object": {KUBECONFIG_RULE}'
    one = _with(KUSTOMIZATION, kubeConfig={"secretRef": {"name": "a"}})
    assert check(crds["Kustomization"], one).errors == []


def test_git_repository_service_account_rule(crds: dict[str, Schema]) -> None:
    """GitRepository: serviceAccountName only with provider azure or aws (its CRD's rule)."""
    repo = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "r", "namespace": "flux-system"},
        "spec": {"interval": "1m", "url": "https://git.example/r.git", "serviceAccountName": "sa"},
    }
    errors = check(crds["GitRepository"], repo).errors
    assert [(e.field, e.message) for e in errors] == [
        ("spec", "serviceAccountName can only be set when provider is 'azure' or 'aws'")
    ]
    repo["spec"]["provider"] = "azure"
    assert check(crds["GitRepository"], repo).errors == []


def test_receiver_rules(crds: dict[str, Schema]) -> None:
    """The Receiver CRD's four rules, each with its own message."""
    oidc = _with(RECEIVER, type="generic-oidc")
    assert [e.message for e in check(crds["Receiver"], oidc).errors] == [
        "generic-oidc receivers must define at least one oidcProvider",
        "secretRef cannot be set when type is generic-oidc",
    ]
    no_secret = copy.deepcopy(RECEIVER)
    del no_secret["spec"]["secretRef"]
    assert [e.message for e in check(crds["Receiver"], no_secret).errors] == [
        "secretRef is required when type is not generic-oidc"
    ]


IMMUTABLE: Schema = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "url is immutable"}
                    ],
                },
                "count": {
                    "type": "integer",
                    "x-kubernetes-validations": [
                        {"rule": "self >= oldSelf"},
                        {"rule": "self < 100"},
                    ],
                },
            },
        }
    },
}


def _errors(schema: Schema, spec: Any, old_spec: Any = None) -> list[FieldError]:
    old = None if old_spec is None else {"spec": old_spec}
    return check(schema, {"spec": spec}, old).errors


def test_an_immutable_field() -> None:
    """The immutability idiom (https://kubernetes.io/blog/2022/09/29/enforce-immutability-using-cel):
    skipped on create and where the stored object lacks the field, refused when it changes."""
    assert _errors(IMMUTABLE, {"url": "a"}) == []
    assert _errors(IMMUTABLE, {"url": "a"}, {"url": "a"}) == []
    assert _errors(IMMUTABLE, {"url": "a"}, {}) == []
    assert _errors(IMMUTABLE, {"url": "b"}, {"url": "a"}) == [
        FieldError(
            "spec.url", fe.INVALID, "url is immutable", 'Invalid value: "string": url is immutable'
        )
    ]


def test_without_message_the_rule_is_quoted() -> None:
    """ValidationRule.message: if unset the message is ``failed rule: {Rule}``."""
    assert _errors(IMMUTABLE, {"count": 3}, {"count": 4}) == [
        FieldError(
            "spec.count",
            fe.INVALID,
            "failed rule: self >= oldSelf",
            'Invalid value: "integer": failed rule: self >= oldSelf',
        )
    ]


def test_unchanged_values_ratchet_but_transition_rules_still_run() -> None:
    """KEP-4008: a non-transition rule failing on a value equal to the stored one is not an
    error (validation.go: ``!compiled.UsesOldSelf && correlation.shouldRatchetError()``);
    transition rules are never ratcheted; a changed value is checked."""
    assert _errors(IMMUTABLE, {"count": 150}, {"count": 150}) == []
    assert [e.message for e in _errors(IMMUTABLE, {"count": 151}, {"count": 150})] == [
        "failed rule: self < 100"
    ]
    strict = copy.deepcopy(IMMUTABLE)
    strict["properties"]["spec"]["properties"]["count"]["x-kubernetes-validations"] = [
        {"rule": "self > oldSelf", "message": "must grow"}
    ]
    assert [e.message for e in _errors(strict, {"count": 5}, {"count": 5})] == ["must grow"]


OPTIONAL: Schema = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "phase": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {
                            "rule": DONE_IS_FINAL,
                            "message": "Done is final",
                            "optionalOldSelf": True,
                        },
                        {
                            "rule": "oldSelf.hasValue() || self == 'New'",
                            "message": "starts New",
                            "optionalOldSelf": True,
                        },
                    ],
                }
            },
        }
    },
}


def test_optional_old_self_runs_on_create() -> None:
    """optionalOldSelf: true makes oldSelf a CEL optional and the rule runs even without a
    stored value (validation.go, optionalOldSelfActivation)."""
    assert [e.message for e in _errors(OPTIONAL, {"phase": "Running"})] == ["starts New"]
    assert _errors(OPTIONAL, {"phase": "New"}) == []
    assert _errors(OPTIONAL, {"phase": "Done"}, {"phase": "Running"}) == []
    assert [e.message for e in _errors(OPTIONAL, {"phase": "Running"}, {"phase": "Done"})] == [
        "Done is final"
    ]


def _rule_schema(rule: Mapping[str, Any], **extra: Any) -> Schema:
    spec: Schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string"}},
            "ratio": {"type": "number"},
            "size": {"type": "integer"},
            "wait": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "foo-bar": {"type": "string"},
            "namespace": {"type": "string"},
        },
        "x-kubernetes-validations": [dict(rule)],
        **extra,
    }
    return {"type": "object", "properties": {"spec": spec}}


def test_reason_field_path_and_message_expression() -> None:
    """reason picks the error type, fieldPath extends the path, messageExpression is evaluated
    (validation.go fieldErrorForReason and evalMessageExpression)."""
    rule = {
        "rule": "self.name.startsWith('app-')",
        "reason": "FieldValueForbidden",
        "fieldPath": ".name",
        "messageExpression": "'name ' + self.name + ' lacks app-'",
    }
    assert _errors(_rule_schema(rule), {"name": "web"}) == [
        FieldError(
            "spec.name", fe.FORBIDDEN, "name web lacks app-", "Forbidden: name web lacks app-"
        )
    ]
    required = {"rule": "has(self.name)", "reason": "FieldValueRequired", "message": "say who"}
    assert _errors(_rule_schema(required), {})[0].status_message == "Required value: say who"


@pytest.mark.parametrize("expression", ["1", "''", "'two\\nlines'", "self.nothing"])
def test_a_bad_message_expression_falls_back(expression: str) -> None:
    """A messageExpression that is not a non-empty one-line string, or fails, gives way to the
    static message (evalMessageExpression, then ruleMessageOrDefault)."""
    rule = {"rule": "false", "message": "static", "messageExpression": expression}
    assert [e.message for e in _errors(_rule_schema(rule), {})] == ["static"]


def test_a_map_entry_path_uses_brackets() -> None:
    """Rules below additionalProperties report ``labels[key]`` (field.Path.Key)."""
    schema = _rule_schema({"rule": "true"})
    schema["properties"]["spec"]["properties"]["labels"]["additionalProperties"][
        "x-kubernetes-validations"
    ] = [{"rule": "self.size() < 4", "message": "short"}]
    assert [e.field for e in _errors(schema, {"labels": {"ok": "1", "app": "toolong"}})] == [
        "spec.labels[app]"
    ]


def test_a_root_rule_reports_on_nil() -> None:
    """A rule on the root schema runs with self = the object; its path is ``<nil>``."""
    schema: Schema = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('a')", "message": "names start with a"}
        ],
    }
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "bob"}}
    assert [(e.field, e.message) for e in check(schema, obj).errors] == [
        ("<nil>", "names start with a")
    ]


def test_a_rule_that_does_not_compile_is_an_error_naming_it() -> None:
    """A rule cel-python cannot parse fails validation with an error naming the rule (the
    server's ``rule compile error:`` wording), never an exception."""
    errors = _errors(_rule_schema({"rule": "self.name ==", "message": "m"}), {"name": "x"})
    assert len(errors) == 1
    assert errors[0].message.startswith("rule compile error: compilation failed")
    assert "self.name ==" in errors[0].message


def test_a_rule_that_fails_to_evaluate_is_an_error() -> None:
    """An evaluation error is ``<error> evaluating rule: <rule>`` (validation.go), e.g. a
    missing key as cel-go words it: ``no such key``."""
    errors = _errors(_rule_schema({"rule": "self.name == 'x'"}), {})
    assert [e.message for e in errors] == ["no such key: name evaluating rule: self.name == 'x'"]
    overload = _errors(_rule_schema({"rule": "self.name > 1"}), {"name": "a"})
    assert overload[0].message.startswith("'no such overload': call arguments did not match")


@pytest.mark.parametrize(
    ("rule", "spec"),
    [
        ("has(self.name) && size(self.name) == 3", {"name": "abc"}),
        ("self.name.matches('^[a-c]+$')", {"name": "abc"}),
        (
            "self.name.startsWith('a') && self.name.endsWith('c') && self.name.contains('b')",
            {"name": "abc"},
        ),
        (
            "'b' in self.items && self.items.all(i, i != '') && self.items.exists(i, i == 'a')",
            {"items": ["a", "b"]},
        ),
        ("self.items.exists_one(i, i == 'a')", {"items": ["a", "b"]}),
        ("self.items.map(i, i + '!') == ['a!', 'b!']", {"items": ["a", "b"]}),
        ("self.items.filter(i, i != 'a').size() == 1", {"items": ["a", "b"]}),
        ("self.name.lowerAscii() == 'abc' && self.name.upperAscii() == 'ABC'", {"name": "aBc"}),
        ("duration(self.wait) <= duration('1m')", {"wait": "45s"}),
        ("self.name.split('-').join('.') == 'a.b' && self.name.indexOf('-') == 1", {"name": "a-b"}),
        ("self.name.trim() == 'x' && self.name.replace(' ', '') == 'x'", {"name": " x "}),
        ("self.items.isSorted() && self.items.indexOf('b') == 1", {"items": ["a", "b"]}),
        ("self.ratio > 0.5 && self.ratio == 2.0 && self.size == 2", {"ratio": 2, "size": 2}),
        (
            "self.foo__dash__bar == 'x' && self.__namespace__ == 'n'",
            {"foo-bar": "x", "namespace": "n"},
        ),
        ("self.labels.all(k, self.labels[k] != '') && 'a' in self.labels", {"labels": {"a": "1"}}),
        ("self == self && self != {'name': 'other'}", {"name": "me"}),
    ],
)
def test_the_functions_real_crds_use(rule: str, spec: dict[str, Any]) -> None:
    """The CEL available to CRD rules (https://kubernetes.io/docs/reference/using-api/cel):
    macros, the strings extension and the Kubernetes list library (k8s.io/apiserver
    pkg/cel/library: isSorted, indexOf, ...), durations, the type mapping (a ``number`` written
    as 2 is a double) and escaped property names (``foo__dash__bar``, ``__namespace__``), the
    last two as the custom-resource-definitions task page (#validation-rules) describes."""
    assert _errors(_rule_schema({"rule": rule}), spec) == []
    assert _errors(_rule_schema({"rule": f"!({rule})", "message": "negated"}), spec) != []


def test_set_lists_compare_without_order() -> None:
    """Equality on list-type set (and map) lists ignores order; on atomic lists it does not
    (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation-rules)."""
    for list_type, expected in (("set", []), ("atomic", ["frozen"])):
        schema: Schema = {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "tags": {
                            "type": "array",
                            "x-kubernetes-list-type": list_type,
                            "items": {"type": "string"},
                            "x-kubernetes-validations": [
                                {"rule": "self == oldSelf", "message": "frozen"}
                            ],
                        }
                    },
                }
            },
        }
        errors = _errors(schema, {"tags": ["b", "a"]}, {"tags": ["a", "b"]})
        assert [e.message for e in errors] == expected


def test_map_list_items_correlate_by_key() -> None:
    """Transition rules inside a list-type map list see the stored item with the same key;
    atomic list items have no oldSelf (validation.go validateArray, makeMapList)."""
    item = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "port": {
                "type": "integer",
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "port is fixed"}
                ],
            },
        },
    }
    schema: Schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": item,
                    }
                },
            }
        },
    }
    stored = {"ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53}]}
    reordered = {"ports": [{"name": "dns", "port": 53}, {"name": "http", "port": 80}]}
    assert _errors(schema, reordered, stored) == []
    moved = {"ports": [{"name": "dns", "port": 54}, {"name": "new", "port": 1}]}
    assert [e.field for e in _errors(schema, moved, stored)] == ["spec.ports[0].port"]


def test_null_values_are_not_evaluated() -> None:
    """Only non-null values are validated (validation.go: ``if obj == nil``)."""
    schema = _rule_schema({"rule": "true"})
    schema["properties"]["spec"]["properties"]["name"].update(
        nullable=True, **{"x-kubernetes-validations": [{"rule": "self.size() > 0"}]}
    )
    assert _errors(schema, {"name": None}) == []


def test_rules_are_compiled_once_per_text() -> None:
    """Compiled programs are cached per rule text (a bounded cache)."""
    first = cel.compile_rule("1 + 1 == 2")
    assert cel.compile_rule("1 + 1 == 2") is first
    assert cel.compile_rule.cache_info().maxsize is not None


def test_transition_rules_are_recognised() -> None:
    """A rule is a transition rule when it references oldSelf (not in a string literal)."""
    assert cel.uses_old_self("self == oldSelf")
    assert not cel.uses_old_self("self.name != 'oldSelf'")
