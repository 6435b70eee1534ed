"""A Kustomization's postBuild as the variables the render-fidelity gate renders with
(shared.model.postbuild): inline values and substituteFrom sources, an optional source that is
missing, a required one that is missing, and a name defined twice."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.model.postbuild import sources, substitutions
from shared.model.render_fidelity import RENDER_NOT_VERIFIABLE, Mismatch


def ks(post_build: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"interval": "10m", "path": "./apps", "prune": True}
    if post_build is not None:
        spec["postBuild"] = post_build
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "spec": spec}


STORE: dict[tuple[str, str], Mapping[str, str]] = {
    ("ConfigMap", "vars"): {"REGION": "eu", "TIER": "gold"},
    ("Secret", "creds"): {"TOKEN": "s3cret"},
    ("ConfigMap", "clash"): {"REGION": "us"},
}


def read(kind: str, name: str) -> Mapping[str, str] | None:
    return STORE.get((kind, name))


def test_no_post_build_substitutes_nothing() -> None:
    assert substitutions(ks(None), read) is None
    assert substitutions(ks({"substitute": {}}), read) is None


def test_inline_values_and_sources_are_merged() -> None:
    post = {
        "substitute": {"TIER": "gold", "ENV": "prod"},
        "substituteFrom": [
            {"kind": "ConfigMap", "name": "vars"},
            {"kind": "Secret", "name": "creds"},
            {"kind": "ConfigMap", "name": "absent", "optional": True},
        ],
    }
    assert sources(ks(post)) == [
        ("ConfigMap", "vars", False),
        ("Secret", "creds", False),
        ("ConfigMap", "absent", True),
    ]
    assert substitutions(ks(post), read) == {
        "TIER": "gold",
        "ENV": "prod",
        "REGION": "eu",
        "TOKEN": "s3cret",
    }


def test_a_required_source_that_is_missing_makes_the_render_unknown() -> None:
    found = substitutions(ks({"substituteFrom": [{"kind": "ConfigMap", "name": "gone"}]}), read)
    assert isinstance(found, Mismatch)
    assert found.reason == RENDER_NOT_VERIFIABLE
    assert "ConfigMap gone does not exist" in found.message


def test_a_name_with_two_values_makes_the_render_unknown() -> None:
    post = {
        "substituteFrom": [
            {"kind": "ConfigMap", "name": "vars"},
            {"kind": "ConfigMap", "name": "clash"},
        ]
    }
    found = substitutions(ks(post), read)
    assert isinstance(found, Mismatch)
    assert found.message.startswith("variable REGION has one value in ConfigMap vars")
    same = {
        "substitute": {"REGION": "eu"},
        "substituteFrom": [{"kind": "ConfigMap", "name": "vars"}],
    }
    assert substitutions(ks(same), read) == {"REGION": "eu", "TIER": "gold"}
