"""Issue 25 item 4: the applier-kind table is the one place a kind is added.

A kind is one record in each half of the table (``shared.model.appliers.KINDS``: the rules'
half; ``shared.appliers.ADAPTERS``: the adapters'), keyed by ``ApplierKind``; these tests fail
when a kind is missing from either half, from the ``Literal``, or from the GitTarget CRD's
``spec.applier`` (mypy does not check a dict literal for exhaustiveness).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, get_args

import pytest
import yaml

from sandbox.paths import CHART_CRDS
from shared.appliers import ADAPTERS, for_kind
from shared.decide.apply_window import ANY_APPLIER, managers_of
from shared.model.appliers import KINDS, REASONS, Applier, ApplierKind, catches_up, gets_repairs
from shared.model.crds import parse_applier

#: ``spec.applier`` properties that name no kind.
NOT_A_KIND = {"quietPeriod", "clusterProviderRef"}


def _applier_schema() -> Mapping[str, Any]:
    crd = yaml.safe_load((CHART_CRDS / "gitopsreverser.io_gittargets.yaml").read_text())
    version = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return version["properties"]["spec"]["properties"]["applier"]  # type: ignore[no-any-return]


def test_every_kind_has_a_record_in_both_halves_of_the_table() -> None:
    kinds = set(get_args(ApplierKind))
    assert kinds == set(KINDS) == set(ADAPTERS)
    for kind in kinds:
        assert KINDS[kind].kind == kind
        assert ADAPTERS[kind].kind == kind
        assert for_kind(kind) is ADAPTERS[kind]


@pytest.mark.parametrize("kind", get_args(ApplierKind))
def test_every_kind_has_every_entry(kind: ApplierKind) -> None:
    """No field of a kind's record is left empty where every kind needs one."""
    rules = KINDS[kind]
    assert {f.name for f in fields(rules)} >= {"spec_field", "product", "owed", "managers"}
    assert rules.spec_field and rules.product
    assert ADAPTERS[kind].product == rules.product
    # Every kind is owed what a foreign commit and a refusal owe (A1, D7).
    assert {"ForeignCommit", "Refusal"} <= rules.owed <= set(REASONS)
    # The window (W1) can only withhold the writes of a kind whose managers it knows.
    assert managers_of(kind) == rules.managers <= ANY_APPLIER


def test_the_crd_names_each_kind_by_its_spec_field() -> None:
    schema = _applier_schema()
    assert set(schema["properties"]) - NOT_A_KIND == {r.spec_field for r in KINDS.values()}
    assert all(f"has(self.{r.spec_field})" in yaml.safe_dump(schema) for r in KINDS.values())


@pytest.mark.parametrize("kind", get_args(ApplierKind))
def test_the_crd_parser_reads_each_kind_from_its_spec_field(kind: ApplierKind) -> None:
    rules = KINDS[kind]
    named = {"name": "app", "namespace": "apps"}
    webhook = {"url": "https://hooks.example/apply", "secretRef": {"name": "key"}}
    spec = {"applier": {rules.spec_field: named if rules.names_object else webhook}}
    ref, _, problem, endpoint = parse_applier(spec, "self", "team")
    assert problem == ""
    assert ref is not None and ref.kind == kind
    assert (endpoint is None) == rules.names_object
    quiet = {"applier": {**spec["applier"], "quietPeriod": "1m"}}
    assert (parse_applier(quiet, "self", "team")[2] == "") == rules.quiet_period


def test_catch_up_and_repair_follow_the_table() -> None:
    """A1/W1: CatchUp only for Flux, Repair only for Argo CD, read from the records."""
    assert {k for k in KINDS if catches_up(k)} == {"Kustomization"}
    assert {k for k in KINDS if gets_repairs(k)} == {"Application"}
    for kind, rules in KINDS.items():
        applier = Applier(
            kind,
            foreign_commit="c" * 40,
            foreign_uids=frozenset({"a"}),
            refusals=frozenset({"b"}),
            catch_up="d" * 40,
            catch_up_uids=frozenset({"c"}),
            repairs=frozenset({"d"}),
        )
        assert set(applier.owes()) == rules.owed


def test_an_unknown_kind_is_owed_nothing_the_table_does_not_give() -> None:
    assert not catches_up("HelmRelease")
    assert not gets_repairs("HelmRelease")
    assert managers_of("HelmRelease") == frozenset()
