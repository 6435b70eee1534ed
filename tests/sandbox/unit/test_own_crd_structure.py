"""The project's own CRDs are well-formed apiextensions.k8s.io/v1 definitions.

A real API server refuses a CRD whose schema is not structural or whose CEL rules do not
compile, and it does so at install time, long after these files were written. These checks
catch that here, without a cluster: each test names the Kubernetes rule it follows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from kubernetes.client import ApiClient, V1CustomResourceDefinition, V1JSONSchemaProps

from sandbox import paths

GROUP = "gitopsreverser.io"
VERSION = "v1alpha1"
KINDS = {
    "GitProvider": "Namespaced",
    "ClusterProvider": "Cluster",
    "GitTarget": "Namespaced",
    "WatchRule": "Namespaced",
    "ClusterWatchRule": "Cluster",
    "CommitRequest": "Namespaced",
}
READY_STATUS = '.status.conditions[?(@.type=="Ready")].status'
READY_REASON = '.status.conditions[?(@.type=="Ready")].reason'
READY_MESSAGE = '.status.conditions[?(@.type=="Ready")].message'
# Keys a JSONSchemaProps may carry, as the official client models them.
SCHEMA_KEYS = frozenset(V1JSONSchemaProps.attribute_map.values())
# Keys the API server refuses in a CRD schema (Kubernetes docs, "Validation").
FORBIDDEN_KEYS = frozenset(
    {
        "definitions",
        "dependencies",
        "deprecated",
        "discriminator",
        "id",
        "patternProperties",
        "readOnly",
        "writeOnly",
        "xml",
        "$ref",
    }
)
UNTYPED_OK = ("x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields")


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = yaml.safe_load(handle)
    return loaded


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    """Every CRD the chart ships, by kind."""
    loaded = [_load(path) for path in paths.own_crd_files()]
    return {crd["spec"]["names"]["kind"]: crd for crd in loaded}


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    root: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return root


def _nodes(node: dict[str, Any], where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node below (and including) ``node``, with its field path."""
    yield where, node
    for name, child in node.get("properties", {}).items():
        yield from _nodes(child, f"{where}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _nodes(node["items"], f"{where}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _nodes(node["additionalProperties"], f"{where}{{}}")


def _all_nodes(crds: dict[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for kind, crd in crds.items():
        for where, node in _nodes(_schema(crd)):
            yield f"{kind}{where}", node


def _rules(crds: dict[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for where, node in _all_nodes(crds):
        for rule in node.get("x-kubernetes-validations", []):
            yield where, rule


def test_the_chart_ships_the_four_kinds(crds: dict[str, dict[str, Any]]) -> None:
    """docs/crds.md: five kinds of group gitopsreverser.io, v1alpha1 served and stored.

    The object name must be ``<plural>.<group>`` (Kubernetes docs, "Create a
    CustomResourceDefinition": https://kubernetes.io/docs/tasks/extend-kubernetes/
    custom-resources/custom-resource-definitions/).
    """
    assert {kind: crd["spec"]["scope"] for kind, crd in crds.items()} == KINDS
    for crd in crds.values():
        spec = crd["spec"]
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert spec["group"] == GROUP
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{GROUP}"
        assert spec["names"]["listKind"] == f"{spec['names']['kind']}List"
        assert [(v["name"], v["served"], v["storage"]) for v in spec["versions"]] == [
            (VERSION, True, True)
        ]
        assert spec["versions"][0]["subresources"] == {"status": {}}


def test_each_crd_decodes_with_the_official_client(crds: dict[str, dict[str, Any]]) -> None:
    """The kubernetes client's V1CustomResourceDefinition model accepts every file.

    The client's models enforce the required fields of apiextensions.k8s.io/v1 (names,
    versions, schema), so a misspelt or missing one fails here as it would on a server.
    """
    client = ApiClient()
    for kind, crd in crds.items():
        decoded = client.deserialize(
            json.dumps(crd), "V1CustomResourceDefinition", "application/json"
        )
        assert isinstance(decoded, V1CustomResourceDefinition)
        assert decoded.spec.names.kind == kind
        validation = decoded.spec.versions[0].schema
        assert validation is not None and validation.open_apiv3_schema is not None
        assert validation.open_apiv3_schema.type == "object"


def test_every_node_is_structural(crds: dict[str, dict[str, Any]]) -> None:
    """Structural schema, rule 1, and the "Validation" restrictions.

    Kubernetes docs, "Specifying a structural schema" and "Validation"
    (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/
    custom-resource-definitions/#specifying-a-structural-schema): every node has a type,
    no forbidden keys, additionalProperties never false nor beside properties, no
    uniqueItems: true, and no logical junctors (we use none).
    """
    problems: list[str] = []
    for where, node in _all_nodes(crds):
        if "type" not in node and not any(node.get(key) for key in UNTYPED_OK):
            problems.append(f"{where}: no type")
        if unknown := set(node) - SCHEMA_KEYS:
            problems.append(f"{where}: unknown keys {sorted(unknown)}")
        if used := set(node) & (FORBIDDEN_KEYS | {"allOf", "anyOf", "oneOf", "not"}):
            problems.append(f"{where}: forbidden keys {sorted(used)}")
        if node.get("additionalProperties") is False or (
            "additionalProperties" in node and "properties" in node
        ):
            problems.append(f"{where}: bad additionalProperties")
        if node.get("uniqueItems") is True:
            problems.append(f"{where}: uniqueItems")
    assert problems == []


def test_metadata_is_left_to_the_server(crds: dict[str, dict[str, Any]]) -> None:
    """Structural schema, rule 4: metadata may only restrict name and generateName.

    We restrict nothing, so the root ``metadata`` node is a bare object.
    """
    for crd in crds.values():
        assert _schema(crd)["properties"]["metadata"] == {"type": "object"}


def test_list_map_keys_are_always_present(crds: dict[str, dict[str, Any]]) -> None:
    """x-kubernetes-list-map-keys must name properties that are required or defaulted.

    apiextensions.k8s.io/v1 JSONSchemaProps, field x-kubernetes-list-map-keys (the
    official client's V1JSONSchemaProps docstring says the same).
    """
    seen = 0
    for where, node in _all_nodes(crds):
        if node.get("x-kubernetes-list-type") != "map":
            continue
        seen += 1
        items = node["items"]
        for key in node["x-kubernetes-list-map-keys"]:
            assert key in items.get("required", []) or "default" in items["properties"][key], where
    assert seen == len(KINDS) + 1  # every kind's conditions, ClusterProvider's allowances


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(item) for item in node]
    return node


def _flux_condition_schema() -> dict[str, Any]:
    """A condition's schema in the real Flux Kustomization CRD (../shared/crds)."""
    [path] = [p for p in paths.third_party_crd_files() if "kustomizations" in p.name]
    version = _load(path)["spec"]["versions"][0]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    flux: dict[str, Any] = status["properties"]["conditions"]["items"]
    return flux


def test_conditions_have_the_standard_shape(crds: dict[str, dict[str, Any]]) -> None:
    """status.conditions is metav1.Condition, one entry per type.

    The item schema, descriptions aside, is the one the real Flux Kustomization CRD in
    ../shared/crds carries (generated from k8s.io/apimachinery metav1.Condition): required
    type, status, lastTransitionTime, reason, message; status True, False or Unknown.
    """
    expected = _without_descriptions(_flux_condition_schema())
    for crd in crds.values():
        conditions = _schema(crd)["properties"]["status"]["properties"]["conditions"]
        assert conditions["x-kubernetes-list-type"] == "map"
        assert conditions["x-kubernetes-list-map-keys"] == ["type"]
        ours = _without_descriptions(conditions["items"])
        assert {**ours, "required": sorted(ours["required"])} == expected


def test_every_cel_rule_compiles(crds: dict[str, dict[str, Any]]) -> None:
    """Every x-kubernetes-validations rule parses as CEL, with a one-line message.

    Kubernetes docs, "Validation rules": rules are compiled when the CRD is created, and a
    message must not contain line breaks (apiextensions.k8s.io/v1 ValidationRule.message).
    """
    env = celpy.Environment()
    compiled = 0
    for where, rule in _rules(crds):
        env.program(env.compile(rule["rule"]))
        assert rule["message"], where
        assert "\n" not in rule["message"], where
        compiled += 1
    assert compiled >= 9


def test_immutable_fields_use_transition_rules(crds: dict[str, dict[str, Any]]) -> None:
    """Each identity field carries ``self == oldSelf``.

    Kubernetes blog "Enforce CRD Immutability with CEL Transition Rules"
    (https://kubernetes.io/blog/2022/09/29/enforce-immutability-using-cel): a rule that
    reads oldSelf is a transition rule, checked on update only.
    """
    immutable = {where for where, rule in _rules(crds) if rule["rule"] == "self == oldSelf"}
    assert immutable == {
        "GitProvider.spec.url",
        "GitTarget.spec.providerRef",
        "GitTarget.spec.branch",
        "GitTarget.spec.path",
        "GitTarget.spec.clusterProviderRef",
        "CommitRequest.spec",  # P6: one-shot, the whole spec
    }


def test_printer_columns(crds: dict[str, dict[str, Any]]) -> None:
    """kubectl get shows Ready, Reason and Message from the Ready condition, and Age (the
    message in the default view, as Flux has it: issue 26; a ClusterProvider
    also the reasons of its AttributionConfigured and AuditFactsReceived, P5 and N5: empty
    without spec.attribution).

    Kubernetes docs, "Additional printer columns": priority 0 columns are shown by default;
    a type ``date`` column renders as an age.
    """
    extra = {
        "GitProvider": ["URL"],
        "ClusterProvider": ["Attribution", "Facts"],
        "GitTarget": ["Branch", "Path"],
        "WatchRule": ["Target"],
        "ClusterWatchRule": ["Target Namespace", "Target"],
        "CommitRequest": ["Target", "SHA"],
    }
    for kind, crd in crds.items():
        columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
        default = {c["name"]: c for c in columns if c.get("priority", 0) == 0}
        assert sorted(default) == sorted(
            ["Ready", "Reason", "Age", "Message", *extra.get(kind, [])]
        )
        assert default["Ready"]["jsonPath"] == READY_STATUS
        assert default["Reason"]["jsonPath"] == READY_REASON
        assert default["Message"]["jsonPath"] == READY_MESSAGE
        assert default["Age"] == {
            "name": "Age",
            "type": "date",
            "jsonPath": ".metadata.creationTimestamp",
        }


#: Short names a cluster beside ours is likely to serve: Kubernetes' own, cert-manager's
#: (CertificateRequest is ``cr``), Flux's and Argo CD's. kubectl picks one resource for a
#: short name, so a collision hides ours or theirs (issue 24 §10).
TAKEN = {
    "cm", "svc", "sa", "ev", "deploy", "ns", "po", "pv", "pvc", "rs", "sts", "ds", "cj",
    "ing", "netpol", "pdb", "hpa", "crd", "crds", "ep", "no", "rc", "quota", "limits", "csr",
    "pc", "sc", "cs",
    "cr", "crs", "cert", "certs", "issuer", "clusterissuer",
    "gitrepo", "ks", "hr", "hc", "ocirepo", "bucket",
    "app", "apps", "appproj", "appprojs", "appset", "appsets",
}  # fmt: skip


def test_short_names_are_unique(crds: dict[str, dict[str, Any]]) -> None:
    """kubectl resolves a short name to one resource, so ours must not collide, with each
    other or with a well-known one."""
    short = {kind: crd["spec"]["names"]["shortNames"] for kind, crd in crds.items()}
    assert not TAKEN & {name for names in short.values() for name in names}
    assert short == {
        "GitProvider": ["gp"],
        "ClusterProvider": ["cp"],
        "CommitRequest": ["creq"],
        "GitTarget": ["gt"],
        "WatchRule": ["wr"],
        "ClusterWatchRule": ["cwr"],
    }
    for crd in crds.values():
        assert crd["spec"]["names"]["categories"] == ["gitops-reverser"]
