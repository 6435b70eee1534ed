"""``convert``'s output is accepted by an API server serving our CRDs as the chart ships them
(the sandbox's double validates each object against the CRD's schema and CEL rules), and the
upstream manifests themselves, relabelled to our group but not converted, are not."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox import manifests as m
from sandbox.kube.server import KubeApiServer
from sandbox.paths import CHART_CRDS
from services.cli.convert import convert, parse
from tests.integration.cli.harness import GROUP, VERSION, Cli

CORPUS = Path(__file__).parents[2] / "unit" / "cli" / "convert_corpus"
UPSTREAM = sorted(CORPUS.glob("*.upstream.yaml"))


@pytest.fixture
def chart_api(tmp_path: Path) -> Iterator[KubeApiServer]:
    """The API double with exactly the chart's CRDs (none modified)."""
    server = KubeApiServer(sorted(CHART_CRDS.glob("*.yaml")))
    server.start()
    server.write_kubeconfig(tmp_path / "kubeconfig")
    try:
        yield server
    finally:
        server.stop()


def apply(api: client.ApiClient, doc: dict[str, Any]) -> None:
    if doc["kind"] == "ConfigMap":
        configmaps = client.CoreV1Api(api)
        configmaps.create_namespaced_config_map(doc["metadata"]["namespace"], doc)  # type: ignore[arg-type]
    else:
        m.create(api, doc)


def namespaces(api: client.ApiClient, docs: list[dict[str, Any]]) -> None:
    for ns in sorted({d["metadata"].get("namespace") for d in docs} - {None}):
        m.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


@pytest.mark.parametrize("path", UPSTREAM, ids=[p.name for p in UPSTREAM])
def test_the_converted_corpus_is_accepted(chart_api: KubeApiServer, path: Path) -> None:
    api = chart_api.api_client()
    result = convert(parse(path.read_text(), path.name))
    assert result.refusals == []
    namespaces(api, result.documents)
    for doc in result.documents:
        apply(api, doc)
    custom = client.CustomObjectsApi(api)
    for doc in result.documents:
        if not doc["apiVersion"].startswith(GROUP):
            continue
        plural = m.plural_of(doc["kind"])
        meta = doc["metadata"]
        stored: dict[str, Any]
        if "namespace" in meta:
            stored = custom.get_namespaced_custom_object(  # type: ignore[assignment]
                GROUP, VERSION, meta["namespace"], plural, meta["name"]
            )
        else:
            stored = custom.get_cluster_custom_object(  # type: ignore[assignment]
                GROUP, VERSION, plural, meta["name"]
            )
        for key, value in doc["spec"].items():
            assert stored["spec"][key] == value, (doc["kind"], key)


def test_the_command_output_applies_and_relabelled_upstream_does_not(
    chart_api: KubeApiServer, tmp_path: Path
) -> None:
    api = chart_api.api_client()
    source = CORPUS / "targets.upstream.yaml"
    ran = Cli(tmp_path / "kubeconfig")("convert", "-f", str(source))
    assert ran.code == 0, ran.err
    docs = list(yaml.safe_load_all(ran.out))
    namespaces(api, docs)
    # Upstream's GitTarget with only its apiVersion changed: our schema refuses it.
    raw = copy.deepcopy(parse(source.read_text(), "x")[0])
    raw["apiVersion"] = f"{GROUP}/{VERSION}"
    raw["metadata"]["name"] = "relabelled"
    with pytest.raises(ApiException) as refused:
        apply(api, raw)
    assert refused.value.status == 422
    body = str(refused.value.body)
    assert "spec.onRefusal" in body  # upstream's Ignore is ours' None
    assert "spec.encryption.age.recipients" in body
    for doc in docs:
        apply(api, doc)
    target: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(  # type: ignore[assignment]
        GROUP, VERSION, "team", "gittargets", "apps"
    )
    assert target["spec"]["commit"]["signing"]["secretRef"] == {"name": "signing-key"}


def test_what_convert_refuses_of_0_50_the_chart_refuses_too(chart_api: KubeApiServer) -> None:
    """``serializeNamespace: false`` without ``useKustomize`` is valid upstream, but ours'
    CEL refuses it: ``convert`` refuses it by field instead of printing what would not apply;
    with ``useKustomize`` (and ``suspend``, ``PushEmptyCommit``) it converts and applies."""
    api = chart_api.api_client()
    upstream = parse((CORPUS / "gitops-050.upstream.yaml").read_text(), "x")[0]
    namespaces(api, [upstream])
    alone = copy.deepcopy(upstream)
    del alone["spec"]["placement"]
    (refusal,) = convert([alone]).refusals
    assert "spec.serializeNamespace: false needs spec.placement.useKustomize" in refusal
    naive = convert([{**alone, "spec": {**alone["spec"], "serializeNamespace": True}}])
    assert naive.refusals == []
    unconverted = copy.deepcopy(naive.documents[0])
    unconverted["spec"]["serializeNamespace"] = False
    with pytest.raises(ApiException) as refused:
        apply(api, unconverted)
    assert refused.value.status == 422
    assert "serializeNamespace false needs placement.useKustomize true" in str(refused.value.body)
    (converted,) = convert([upstream]).documents
    apply(api, converted)
    stored: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(  # type: ignore[assignment]
        GROUP, VERSION, "shop", "gittargets", "shop"
    )
    spec = stored["spec"]
    assert (spec["suspend"], spec["onRefusal"], spec["serializeNamespace"]) == (
        True,
        "PushEmptyCommit",
        False,
    )
