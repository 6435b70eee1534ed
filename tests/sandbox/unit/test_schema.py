"""The CRD schema validator prunes, defaults and validates as kube-apiserver does.

Real Flux and Argo CD CRDs are read from the shared folder beside the checkout (never copied
into the project); small inline schemas pin the structural-schema features those CRDs do not
use. Every expected wording comes from the Kubernetes sources named in each docstring, or from
real API server answers quoted in them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import paths
from sandbox.kube import fielderrors as fe
from sandbox.kube.schema import CEL_SKIPPED, Checked, FieldError, check

Schema = dict[str, Any]

KUSTOMIZATION: dict[str, Any] = {
    "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
    "kind": "Kustomization",
    "metadata": {"name": "apps", "namespace": "flux-system"},
    "spec": {
        "interval": "10m",
        "path": "./apps",
        "prune": True,
        "sourceRef": {"kind": "GitRepository", "name": "repo"},
    },
}
GIT_REPOSITORY: dict[str, Any] = {
    "apiVersion": "source.toolkit.fluxcd.io/v1",
    "kind": "GitRepository",
    "metadata": {"name": "repo", "namespace": "flux-system"},
    "spec": {
        "interval": "1m",
        "url": "http://127.0.0.1:3000/org/repo.git",
        "ref": {"branch": "main"},
    },
}
APPLICATION: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "apps", "namespace": "argocd"},
    "spec": {
        "project": "default",
        "source": {
            "repoURL": "http://127.0.0.1:3000/org/repo.git",
            "path": "apps",
            "targetRevision": "main",
        },
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "apps"},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
    },
}
RECEIVER: dict[str, Any] = {
    "apiVersion": "notification.toolkit.fluxcd.io/v1",
    "kind": "Receiver",
    "metadata": {"name": "hook", "namespace": "flux-system"},
    "spec": {
        "type": "github",
        "resources": [{"kind": "GitRepository", "name": "repo"}],
        "secretRef": {"name": "token"},
    },
}


def _check(crds: dict[str, Schema], obj: Mapping[str, Any], old: Any = None) -> Checked:
    return check(crds[obj["kind"]], obj, old)


def _spec(base: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    obj = copy.deepcopy(dict(base))
    obj["spec"].update(changes)
    return obj


def test_the_real_crds_come_from_the_shared_folder(crds: dict[str, Schema]) -> None:
    """shared/crds/README.md: the Flux and Argo CD CRDs are read from ../shared/crds."""
    files = paths.third_party_crd_files()
    assert files
    assert all(Path(f).is_relative_to(paths.shared_dir() / "crds") for f in files)
    assert {"Kustomization", "GitRepository", "Receiver", "Application"} <= set(crds)


def test_a_valid_kustomization_passes_and_gets_its_defaults(crds: dict[str, Schema]) -> None:
    """The Kustomization CRD defaults spec.force to false and status to observedGeneration -1.

    Absent properties with a default are set, and a defaulted object is defaulted inside
    (apiextensions-apiserver pkg/apiserver/schema/defaulting/algorithm.go, ``Default``).
    """
    checked = _check(crds, KUSTOMIZATION)
    assert checked.errors == []
    assert checked.unknown_fields == []
    assert checked.obj["spec"]["force"] is False
    assert checked.obj["status"] == {"observedGeneration": -1}
    assert "force" not in KUSTOMIZATION["spec"], "the input object is never modified"


def test_a_valid_git_repository_passes_with_its_timeout_default(crds: dict[str, Schema]) -> None:
    """GitRepository's spec.timeout defaults to 60s (its CRD); a given value is kept."""
    checked = _check(crds, GIT_REPOSITORY)
    assert checked.errors == []
    assert checked.obj["spec"]["timeout"] == "60s"
    assert _check(crds, _spec(GIT_REPOSITORY, timeout="5m")).obj["spec"]["timeout"] == "5m"


def test_a_nested_default_applies_inside_a_given_object(crds: dict[str, Schema]) -> None:
    """GitRepository spec.verify.mode defaults to HEAD once spec.verify is given."""
    repo = _spec(GIT_REPOSITORY, verify={"secretRef": {"name": "keys"}})
    assert _check(crds, repo).obj["spec"]["verify"]["mode"] == "HEAD"


def test_a_valid_application_passes_untouched(crds: dict[str, Schema]) -> None:
    """The Argo CD Application CRD has no defaults: a valid object comes back equal."""
    checked = _check(crds, APPLICATION)
    assert checked.errors == []
    assert checked.obj == APPLICATION


def test_a_missing_required_field(crds: dict[str, Schema]) -> None:
    """A missing required property is ``Required value`` at its full path.

    kube-openapi object_validator.go reports ``path + "." + name``; apiextensions-apiserver
    validation.go (kubeOpenAPIResultToFieldErrors) trims the leading dot and words it
    field.Required; a real server answers ``spec.tls.certificateAuthorityDataSource.name:
    Required value``.
    """
    obj = copy.deepcopy(KUSTOMIZATION)
    del obj["spec"]["sourceRef"]["name"]
    checked = _check(crds, obj)
    assert checked.errors[0] == FieldError("spec.sourceRef.name", fe.REQUIRED, "Required value")


def test_a_value_outside_the_enum(crds: dict[str, Schema]) -> None:
    """field.NotSupported quotes the value and every allowed one, in the CRD's order
    (k8s.io/apimachinery pkg/util/validation/field/errors.go)."""
    obj = copy.deepcopy(KUSTOMIZATION)
    obj["spec"]["sourceRef"]["kind"] = "HelmRepository"
    assert _check(crds, obj).errors[0] == FieldError(
        "spec.sourceRef.kind",
        fe.NOT_SUPPORTED,
        'Unsupported value: "HelmRepository": supported values: "OCIRepository", '
        '"GitRepository", "Bucket", "ExternalArtifact"',
    )


def test_a_value_that_misses_the_pattern(crds: dict[str, Schema]) -> None:
    """kube-openapi errors/schema.go: ``%s in %s should match '%s'``, reported field.Invalid."""
    checked = _check(crds, _spec(KUSTOMIZATION, interval="10 minutes"))
    assert checked.errors == [
        FieldError(
            "spec.interval",
            fe.INVALID,
            'Invalid value: "10 minutes": spec.interval in body should match '
            "'^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$'",
        )
    ]


def test_a_value_of_the_wrong_type(crds: dict[str, Schema]) -> None:
    """kube-openapi type.go: InvalidType with the value's JSON type as data.

    ``spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
    "string"`` is the real server's answer to a string where an integer belongs.
    """
    checked = _check(crds, _spec(KUSTOMIZATION, prune="yes"))
    assert checked.errors[0] == FieldError(
        "spec.prune",
        fe.TYPE_INVALID,
        'Invalid value: "string": spec.prune in body must be of type boolean: "string"',
    )


def test_too_long_and_too_short_strings(crds: dict[str, Schema]) -> None:
    """maxLength is field.TooLong, worded as of Kubernetes 1.32 (kubernetes/kubernetes#128553:
    ``Too long: may not be more than N bytes``); minLength is Invalid with kube-openapi's text
    (a real server: ``Invalid value: "": ...name in body should be at least 1 chars long``)."""
    long = _check(crds, _spec(KUSTOMIZATION, namePrefix="x" * 201)).errors
    assert long[0] == FieldError(
        "spec.namePrefix", fe.TOO_LONG, "Too long: may not be more than 200 bytes"
    )
    short = _check(crds, _spec(KUSTOMIZATION, namePrefix="")).errors
    assert short == [
        FieldError(
            "spec.namePrefix",
            fe.INVALID,
            'Invalid value: "": spec.namePrefix in body should be at least 1 chars long',
        )
    ]


def test_unknown_fields_are_pruned_and_reported(crds: dict[str, Schema]) -> None:
    """Pruning drops unknown fields at any depth and reports their paths
    (apiextensions-apiserver pkg/apiserver/schema/pruning/algorithm.go); the server turns them
    into ``unknown field "spec.foo"`` warnings. Root metadata is never pruned here."""
    obj = _spec(KUSTOMIZATION, foo=1)
    obj["spec"]["sourceRef"]["bar"] = {"x": 1}
    obj["extra"] = True
    obj["metadata"]["bogus"] = "kept for the server to judge"
    checked = _check(crds, obj)
    assert checked.errors == []
    assert checked.unknown_fields == ["extra", "spec.foo", "spec.sourceRef.bar"]
    assert "foo" not in checked.obj["spec"]
    assert "bar" not in checked.obj["spec"]["sourceRef"]
    assert "extra" not in checked.obj
    assert checked.obj["metadata"]["bogus"] == "kept for the server to judge"


def test_list_items_prune_with_their_index(crds: dict[str, Schema]) -> None:
    """Pruned paths index list items as ``[i]`` (pruning/algorithm.go appendIndex)."""
    receiver = _spec(RECEIVER, resources=[{"kind": "GitRepository", "name": "a", "colour": "red"}])
    assert _check(crds, receiver).unknown_fields == ["spec.resources[0].colour"]


def test_a_date_time_format_is_checked(crds: dict[str, Schema]) -> None:
    """A string format is a type error: a real server answers ``Invalid value: "123":
    spec...url in body must be of type uri: "123"`` (FieldValueTypeInvalid)."""
    app = copy.deepcopy(APPLICATION)
    app["status"] = {"conditions": [{"type": "X", "message": "m", "lastTransitionTime": "now"}]}
    assert _check(crds, app).errors[0] == FieldError(
        "status.conditions[0].lastTransitionTime",
        fe.TYPE_INVALID,
        'Invalid value: "now": status.conditions[0].lastTransitionTime in body must be of type '
        'date-time: "now"',
    )
    app["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-29T10:00:00Z"
    assert _check(crds, app).errors == []


def test_int_or_string_takes_either(crds: dict[str, Schema]) -> None:
    """x-kubernetes-int-or-string validates as type [integer, string]
    (apiextensions-apiserver validation.go, ConvertJSONSchemaPropsWithPostProcess)."""
    app = copy.deepcopy(APPLICATION)
    for count in (3, "3"):
        app["spec"]["source"]["kustomize"] = {"replicas": [{"name": "web", "count": count}]}
        assert _check(crds, app).errors == []
    app["spec"]["source"]["kustomize"] = {"replicas": [{"name": "web", "count": True}]}
    assert _check(crds, app).errors[0] == FieldError(
        "spec.source.kustomize.replicas[0].count",
        fe.TYPE_INVALID,
        'Invalid value: "boolean": spec.source.kustomize.replicas[0].count in body must be of '
        'type integer,string: "boolean"',
    )


def test_a_list_map_key_may_not_repeat(crds: dict[str, Schema]) -> None:
    """listtype/validation.go: the second item with a key is a Duplicate of its key map."""
    provider = {"issuerURL": "https://issuer", "validations": []}
    receiver = _spec(RECEIVER, type="generic", oidcProviders=[provider, dict(provider)])
    errors = _check(crds, receiver).errors
    assert (
        FieldError(
            "spec.oidcProviders[1]",
            fe.DUPLICATE,
            'Duplicate value: map[string]interface {}{"issuerURL":"https://issuer"}',
        )
        in errors
    )


def test_cel_rules_are_skipped_after_a_blocking_error(crds: dict[str, Schema]) -> None:
    """strategy.go hasBlockingErr: after a Required, enum, type or size error the CEL rules do
    not run and one ``<nil>`` error says so, as a real server answers
    (``<nil>: Invalid value: "null": some validation rules were not checked ...``)."""
    both = {"secretRef": {"name": "a"}, "configMapRef": {"name": "b"}}
    obj = _spec(KUSTOMIZATION, kubeConfig=both)
    del obj["spec"]["sourceRef"]
    assert _check(crds, obj).errors == [
        FieldError("spec.sourceRef", fe.REQUIRED, "Required value"),
        CEL_SKIPPED,
    ]
    assert CEL_SKIPPED.message == (
        'Invalid value: "null": some validation rules were not checked because the object '
        "was invalid; correct the existing errors to complete validation"
    )
    assert CEL_SKIPPED.field == "<nil>"


def test_no_cel_note_without_rules() -> None:
    """The note only comes from the CEL validator, which a schema without rules lacks."""
    schema: Schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {"spec": {"type": "object"}},
    }
    assert check(schema, {}).errors == [FieldError("spec", fe.REQUIRED, "Required value")]


SCALARS: Schema = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0.5},
                "mode": {"type": "string", "nullable": True, "enum": ["a", "b"]},
                "name": {"type": "string"},
                "note": {"type": "string", "nullable": True},
                "size": {"type": "string", "default": "small"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": 2,
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "maxProperties": 2,
                },
                "ports": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"port": {"type": "integer"}},
                    },
                },
            },
        }
    },
}


def _spec_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None = None) -> list[FieldError]:
    old = None if old_spec is None else {"spec": old_spec}
    return check(SCALARS, {"spec": spec}, old).errors


def test_numeric_bounds_are_worded_as_kube_openapi() -> None:
    """errors/schema.go maxIncFail/minExcFail; a real server: ``Invalid value: 66666:
    spec.endpoints[0].ip.port in body should be less than or equal to 65535``."""
    assert _spec_errors({"replicas": 11, "ratio": 0.5}) == [
        FieldError(
            "spec.replicas",
            fe.INVALID,
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ),
        FieldError(
            "spec.ratio",
            fe.INVALID,
            "Invalid value: 0.5: spec.ratio in body should be greater than 0.5",
        ),
    ]


def test_integral_numbers_cross_integer_and_number() -> None:
    """type.go: a float with an integral value is an integer, an integer is a number."""
    assert _spec_errors({"replicas": 2.0, "ratio": 1}) == []
    assert _spec_errors({"replicas": 2.5})[0].message == (
        'Invalid value: "number": spec.replicas in body must be of type integer: "number"'
    )


def test_list_and_map_sizes() -> None:
    """minItems is Invalid (kube-openapi wording), maxItems and maxProperties are TooMany
    (validation.go kubeOpenAPIResultToFieldErrors; field.TooMany ``must have at most``)."""
    assert _spec_errors({"tags": []}) == [
        FieldError(
            "spec.tags",
            fe.INVALID,
            "Invalid value: 0: spec.tags in body should have at least 1 items",
        )
    ]
    assert _spec_errors({"tags": ["a", "b", "c"]}) == [
        FieldError("spec.tags", fe.TOO_MANY, "Too many: 3: must have at most 2 items")
    ]
    assert _spec_errors({"labels": {"a": "1", "b": "2", "c": "3"}}) == [
        FieldError("spec.labels", fe.TOO_MANY, "Too many: 3: must have at most 2 items")
    ]


def test_additional_properties_validate_and_prune_map_values() -> None:
    """additionalProperties is the schema of every map value; kube-openapi names an entry
    ``path.key`` (object_validator.go) and pruning uses the value schema too."""
    checked = check(
        SCALARS, {"spec": {"labels": {"app": 1}, "ports": {"http": {"port": 80, "proto": "TCP"}}}}
    )
    assert checked.errors == [
        FieldError(
            "spec.labels.app",
            fe.TYPE_INVALID,
            'Invalid value: "integer": spec.labels.app in body must be of type string: "integer"',
        )
    ]
    assert checked.unknown_fields == ["spec.ports.http.proto"]


def test_nullable_and_non_nullable_nulls() -> None:
    """defaulting/prunenulls.go drops a non-nullable null without default; algorithm.go
    replaces one with a default; a nullable null stays and passes the type check, but a null
    list item of a non-nullable type is a type error ``"null"`` (type.go)."""
    checked = check(SCALARS, {"spec": {"note": None, "name": None, "size": None}})
    assert checked.errors == []
    assert checked.obj["spec"] == {"note": None, "size": "small"}
    assert _spec_errors({"tags": [None]}) == [
        FieldError(
            "spec.tags[0]",
            fe.TYPE_INVALID,
            'Invalid value: "null": spec.tags[0] in body must be of type string: "null"',
        )
    ]


def test_a_nullable_enum_must_list_null() -> None:
    """kube-openapi validator.go basicCommonValidator: a null matches no enum member, so a
    nullable enum field set to null is refused unless the enum itself lists null."""
    assert _spec_errors({"mode": None}) == [
        FieldError(
            "spec.mode", fe.NOT_SUPPORTED, 'Unsupported value: "null": supported values: "a", "b"'
        )
    ]


def test_an_update_ratchets_unchanged_invalid_values() -> None:
    """KEP-4008 (beta and on by default since 1.30, https://www.kubernetes.dev/resources/keps/4008/):
    an error in a value the update leaves equal to the stored one is dropped; a changed value
    is still refused."""
    stored = {"replicas": 50, "name": "x"}
    assert _spec_errors({"replicas": 50, "name": "y"}, old_spec=stored) == []
    assert [e.field for e in _spec_errors({"replicas": 60}, old_spec=stored)] == ["spec.replicas"]


PRESERVE: Schema = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                    },
                },
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"x": {"type": "string"}}}
                    },
                },
                "set": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "pairs": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "port"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
            },
        }
    },
}


def test_preserve_unknown_fields_keeps_unknowns_but_prunes_known_children() -> None:
    """pruning/algorithm.go skipPrune: below preserve-unknown-fields unknown keys stay, yet a
    declared property is pruned by its own schema; preserve at the root keeps root extras."""
    obj = {"top": 1, "spec": {"free": {"any": [1, {"b": 2}], "known": {"a": "x", "z": 1}}}}
    checked = check(PRESERVE, obj)
    assert checked.obj["top"] == 1
    assert checked.obj["spec"]["free"] == {"any": [1, {"b": 2}], "known": {"a": "x"}}
    assert checked.unknown_fields == ["spec.free.known.z"]


def test_an_embedded_resource_keeps_its_type_and_metadata() -> None:
    """pruning/algorithm.go keeps apiVersion, kind and metadata of an embedded resource;
    objectmeta/validation.go requires apiVersion and kind and checks kind as a DNS-1035 label."""
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "x": 1},
        "spec": {"x": "y", "junk": 1},
        "data": {},
    }
    checked = check(PRESERVE, {"spec": {"template": template}})
    assert checked.errors == []
    assert checked.obj["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "x": 1},
        "spec": {"x": "y"},
    }
    assert checked.unknown_fields == ["spec.template.data", "spec.template.spec.junk"]
    errors = check(PRESERVE, {"spec": {"template": {"kind": "Config_Map"}}}).errors
    assert errors[0] == FieldError("spec.template.apiVersion", fe.REQUIRED, "Required value")
    assert errors[1].field == "spec.template.kind"
    assert errors[1].message.startswith(
        'Invalid value: "Config_Map": may have mixed case, but should otherwise match: '
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-'"
    )


def test_set_and_map_lists_refuse_duplicates_once() -> None:
    """listtype/validation.go: the second occurrence is reported, once, at its index."""
    errors = check(PRESERVE, {"spec": {"set": ["a", "b", "a", "a"]}}).errors
    assert errors == [FieldError("spec.set[2]", fe.DUPLICATE, 'Duplicate value: "a"')]
    pairs = [{"name": "a", "port": 1}, {"name": "a", "port": 2}, {"port": 1, "name": "a"}]
    errors = check(PRESERVE, {"spec": {"pairs": pairs}}).errors
    assert errors == [
        FieldError(
            "spec.pairs[2]",
            fe.DUPLICATE,
            'Duplicate value: map[string]interface {}{"name":"a", "port":1}',
        )
    ]


def test_list_duplicates_already_stored_are_tolerated() -> None:
    """strategy.go ValidateUpdate checks list invariants only if the stored object passes."""
    stored = {"spec": {"set": ["a", "a"]}}
    assert check(PRESERVE, {"spec": {"set": ["a", "a", "b"]}}, stored).errors == []
    assert check(PRESERVE, {"spec": {"set": ["a", "a"]}}).errors != []


def test_composition_keywords() -> None:
    """schema_props.go with schema_messages.go: anyOf/oneOf/allOf/not failures are composite
    errors the server reports on ``<nil>`` with the kube-openapi wording."""
    schema: Schema = {
        "type": "object",
        "properties": {
            "v": {
                "type": "string",
                "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}],
                "not": {"enum": ["bad"]},
            }
        },
    }
    errors = check(schema, {"v": "zz"}).errors
    assert errors[0] == FieldError(
        "<nil>", fe.INVALID, 'Invalid value: "": "v" must validate at least one schema (anyOf)'
    )
    assert errors[1].field == "v"
    assert check(schema, {"v": "bad"}).errors[-1].message == (
        'Invalid value: "": "v" must not validate the schema (not)'
    )
    assert check(schema, {"v": "b1"}).errors == []


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (1.5e-05, "1.5e-05"),
        (-2.25, "-2.25"),
        (0.0001, "0.0001"),
        (123456789.0, "1.23456789e+08"),
    ],
)
def test_floats_print_as_go_prints_them(number: float, text: str) -> None:
    """Bad values and bounds are printed by Go's %v (strconv 'g', shortest)."""
    assert fe.go_float(number) == text


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "spec", "x"]), children, max_size=3)
    ),
    max_leaves=12,
)
LEAF_SCHEMAS = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean", "object", "array"])},
    optional={
        "nullable": st.booleans(),
        "enum": st.lists(st.sampled_from(["a", 1, 2.5, True]), min_size=1, max_size=3),
        "default": st.sampled_from(["a", 1, None, {"a": 1}]),
        "minimum": st.integers(-5, 5),
        "maxLength": st.integers(0, 4),
        "pattern": st.sampled_from(["^a", "b$", "("]),
        "format": st.sampled_from(["date-time", "int32", "byte", "uuid"]),
        "x-kubernetes-int-or-string": st.booleans(),
        "x-kubernetes-list-type": st.sampled_from(["set", "map", "atomic"]),
        "x-kubernetes-validations": st.just(
            [
                {"rule": "self == self"},
                {"rule": "size(self) > 1"},
                {"rule": "oldSelf == self"},
                {"rule": "self.a +"},
            ]
        ),
    },
)
SCHEMAS = st.recursive(
    LEAF_SCHEMAS,
    lambda children: st.fixed_dictionaries(
        {"type": st.just("object")},
        optional={
            "properties": st.dictionaries(
                st.sampled_from(["a", "b", "spec"]), children, max_size=3
            ),
            "additionalProperties": children,
            "required": st.lists(st.sampled_from(["a", "b", "spec"]), max_size=2),
            "x-kubernetes-preserve-unknown-fields": st.booleans(),
            "x-kubernetes-embedded-resource": st.booleans(),
            "items": children,
            "anyOf": st.lists(children, min_size=1, max_size=2),
        },
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(
    schema=SCHEMAS,
    value=st.dictionaries(st.sampled_from(["a", "spec", "x"]), JSON_VALUES, max_size=3),
    old=st.none() | st.dictionaries(st.sampled_from(["a", "spec"]), JSON_VALUES, max_size=2),
)
def test_check_never_raises(
    schema: Schema, value: dict[str, Any], old: dict[str, Any] | None
) -> None:
    """Whatever the value and schema, check answers with a result, never an exception."""
    before = copy.deepcopy(value)
    checked = check(schema, value, old)
    assert isinstance(checked.errors, list)
    assert all(isinstance(e, FieldError) and e.field and e.message for e in checked.errors)
    assert value == before
