"""Placement templates (issue 27.6): the variables, the fallbacks, the checks the CRD makes,
and the built-in layout kept when no template is set."""

from __future__ import annotations

import json

import pytest

from shared.decide.path_templates import new_file, render
from shared.decide.placement import PlacementRefused, canonical_path
from shared.model.config import TargetConfig
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.placement import Placement, parse_placement, template_problem

CM = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "app")
DEPLOY = ObjectId("apps", "v1", "deployments", "Deployment", "team", "web")
ROLE = ObjectId("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", "", "reader")


def test_every_variable() -> None:
    template = "{group}/{version}/{resource}/{namespace}/{name}.yaml"
    assert render(template, DEPLOY, {}) == "apps/v1/deployments/team/web.yaml"
    assert render(template, CM, {}) == "v1/configmaps/team/app.yaml"  # no empty segment
    assert (
        render(template, ROLE, {})
        == "rbac.authorization.k8s.io/v1/clusterroles/_cluster/reader.yaml"
    )


def test_fallbacks_for_empty_values_and_labels() -> None:
    assert render("{group|core}/{name}.yaml", CM, {}) == "core/app.yaml"
    assert render("{namespace|cluster}/{name}.yaml", ROLE, {}) == "cluster/reader.yaml"
    assert render("{label:team|shared}/{name}.yaml", CM, {"team": "blue"}) == "blue/app.yaml"
    assert render("{label:team|shared}/{name}.yaml", CM, {}) == "shared/app.yaml"
    assert render("{label:app.kubernetes.io/part-of|x}/{name}.yaml", CM, {}) == "x/app.yaml"
    with pytest.raises(PlacementRefused, match="has no label team"):
        render("{label:team}/{name}.yaml", CM, {})


def test_a_long_name_is_shortened_as_the_canonical_file_name() -> None:
    long = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "n" * 253)
    path = render("{name}.yaml", long, {})
    assert len(path.encode()) <= 255
    assert path == canonical_path("x", long).rsplit("/", 1)[1]


def test_by_type_then_default_then_the_built_in_layout() -> None:
    placement = Placement(
        default="{namespace}/{name}.yaml",
        by_type=(("apps/deployments", "deploy/{name}.yaml"), ("configmaps", "cm/{name}.yml")),
    )
    assert new_file("f", placement, DEPLOY, {}) == "f/deploy/web.yaml"
    assert new_file("f", placement, CM, {}) == "f/cm/app.yml"
    assert new_file("f", placement, ROLE, {}) == "f/_cluster/reader.yaml"
    assert new_file("f", Placement(), DEPLOY, {}) == canonical_path("f", DEPLOY)
    assert new_file(".", Placement(default="{name}.yaml"), CM, {}) == "app.yaml"


@pytest.mark.parametrize(
    ("template", "words"),
    [
        ("{namespace}/{name}", "must end with .yaml"),
        ("/abs/{name}.yaml", "stay under"),
        ("../{name}.yaml", "stay under"),
        ("{kind}/{name}.yaml", "is not a variable"),
        ("{label:}/{name}.yaml", "no valid label key"),
        ("{label:a|b/c}/{name}.yaml", "fallback"),
        ("{name|..}.yaml", "fallback"),
        ("a b/{name}.yaml", "path characters"),
        ("{name.yaml", "path characters"),
    ],
)
def test_what_the_crd_refuses_is_refused_again(template: str, words: str) -> None:
    assert words in template_problem(template)
    parsed = parse_placement({"placement": {"default": template}})
    assert words in parsed.problem


def test_the_spec_is_parsed_with_its_checks() -> None:
    parsed = parse_placement(
        {
            "placement": {"byType": {"apps/deployments": "{name}.yaml"}, "useKustomize": True},
            "serializeNamespace": False,
        }
    )
    assert parsed == Placement("", (("apps/deployments", "{name}.yaml"),), True, False)
    assert parse_placement({}) == Placement()
    assert (
        "needs spec.placement.useKustomize"
        in parse_placement({"serializeNamespace": False}).problem
    )
    bad_key = parse_placement({"placement": {"byType": {"Apps/Deploy": "{name}.yaml"}}})
    assert "is not group/resource" in bad_key.problem


def test_the_branch_workers_config_carries_the_placement() -> None:
    placement = Placement("{name}.yaml", (("configmaps", "c/{name}.yaml"),), True, False)
    target = TargetConfig(
        GitTargetUid("u"),
        "ns",
        "t",
        "url",
        "main",
        "p",
        "OnEvent",
        "None",
        None,
        0.0,
        placement=placement,
    )
    assert TargetConfig.from_json(target.to_json()) == target
    older = json.loads(target.to_json())
    del older["placement"]  # a config published before placement existed
    assert TargetConfig.from_json(json.dumps(older)).placement == Placement()
