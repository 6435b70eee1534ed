"""The CRDs' schema defaults and the product's constants are one set of values.

The API server applies the ``default:`` of each field in ``charts/gitops-reverser/crds/``; the
parsers apply ``shared.model.defaults`` to objects stored before a default existed. If the two
drifted, an object would read differently depending on when it was written, so this walks every
schema and compares in both directions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml

from sandbox.paths import CHART_CRDS
from shared.model import defaults
from shared.model.crds import parse_git_provider, parse_git_target

#: Module-level names in ``shared.model.defaults`` that are not field defaults themselves.
NOT_FIELD_DEFAULTS = frozenset(
    {
        "COMMIT_WINDOW_S",
        "QUIET_PERIOD_S",
        "WEBHOOK_TIMEOUT_S",
        "SCHEMA_DEFAULTS",
        "PRODUCT_DEFAULTS",
    }
)


def _leaves(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    """An object default (``{name: default}``) defaults each of its fields; ``{}`` none."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _leaves(f"{path}.{key}", inner)
    else:
        yield path, value


def _walk(path: str, schema: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _walk(f"{path}.{name}" if path else name, sub)
    if isinstance(schema.get("items"), Mapping):
        yield from _walk(f"{path}[]", schema["items"])


def _fields() -> dict[tuple[str, str], Mapping[str, Any]]:
    """(kind, field path) -> the field's schema, for every version of every chart CRD."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for file in sorted(CHART_CRDS.glob("*.yaml")):
        crd = yaml.safe_load(file.read_text())
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            for path, schema in _walk("", version["schema"]["openAPIV3Schema"]):
                found[(kind, path)] = schema
    return found


FIELDS = _fields()


def _schema_defaults() -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for (kind, path), schema in FIELDS.items():
        if "default" in schema:
            out.update({(kind, p): v for p, v in _leaves(path, schema["default"])})
    return out


def test_the_chart_has_schemas_to_compare() -> None:
    assert {kind for kind, _ in FIELDS} == {
        "ClusterProvider",
        "ClusterWatchRule",
        "CommitRequest",
        "GitProvider",
        "GitTarget",
        "WatchRule",
    }


def test_every_schema_default_is_a_constant_with_the_same_value() -> None:
    assert _schema_defaults() == dict(defaults.SCHEMA_DEFAULTS)


@pytest.mark.parametrize("where", sorted(defaults.PRODUCT_DEFAULTS))
def test_a_product_default_is_for_a_field_the_schema_leaves_without_one(
    where: tuple[str, str],
) -> None:
    assert where in FIELDS, f"{where} is not a field of the chart's CRDs"
    assert "default" not in FIELDS[where]


def test_every_default_constant_is_tied_to_a_field() -> None:
    """A new constant must say which field it defaults (so the comparison above covers it)."""
    named = {
        name: value
        for name, value in vars(defaults).items()
        if name.isupper() and name not in NOT_FIELD_DEFAULTS
    }
    tied = {**defaults.SCHEMA_DEFAULTS, **defaults.PRODUCT_DEFAULTS}
    assert sorted(named.values(), key=repr) == sorted(tied.values(), key=repr)


def test_the_parsers_apply_the_constants_to_a_bare_object() -> None:
    """An object stored before its defaults existed reads as if the API server had set them."""
    provider = parse_git_provider({"metadata": {"name": "p"}, "spec": {"url": "https://h/r"}})
    assert (provider.commit_window_s, provider.committer_name, provider.committer_email) == (
        defaults.COMMIT_WINDOW_S,
        defaults.COMMITTER_NAME,
        defaults.COMMITTER_EMAIL,
    )
    assert (provider.message_one, provider.message_many) == (
        defaults.EVENT_TEMPLATE,
        defaults.GROUP_TEMPLATE,
    )
    target = parse_git_target({"metadata": {"name": "t"}, "spec": {"applier": {}}})
    assert (target.cluster_provider, target.prune, target.on_refusal, target.quiet_period_s) == (
        defaults.CLUSTER_PROVIDER,
        defaults.PRUNE_MODE,
        defaults.ON_REFUSAL,
        defaults.QUIET_PERIOD_S,
    )
