"""The sandbox's unit tests: pure, bounded like the product's unit tier; and the real
third-party CRD schemas, loaded once for the sandbox's validator tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox import paths
from tests.unit.conftest import bound_each

Schema = dict[str, Any]
#: libyaml's safe loader where PyYAML has it (the CRDs are half a megabyte of YAML: seconds in
#: the pure-Python loader), as the sandbox's API server reads them.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Bound every test of this tier as the unit tier's are (a hang fails in a minute)."""
    bound_each(items, Path(__file__).resolve().parent)


@pytest.fixture(scope="session")
def crds() -> dict[str, Schema]:
    """The storage version's openAPIV3Schema of each third-party CRD, by kind."""
    loaded: dict[str, Schema] = {}
    for path in paths.third_party_crd_files():
        with path.open(encoding="utf-8") as handle:
            crd = yaml.load(handle, Loader=LOADER)
        version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
        loaded[crd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return loaded
