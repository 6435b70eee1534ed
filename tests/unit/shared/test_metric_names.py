"""Every metric the product registers is named ``gitops_reverser_...`` (O1, shared.metrics).

Two views, so neither way of defining a metric escapes: each process's metrics class built on
a registry of its own, and the default registry after every product module is imported (which
catches a module-level metric anywhere, not only in a ``metrics.py``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import prometheus_client
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.registry import Collector

import services
import shared
from shared.metrics import PREFIX

#: The client library's own collectors on the default registry (process, platform, gc).
LIBRARY = (
    prometheus_client.PROCESS_COLLECTOR,
    prometheus_client.PLATFORM_COLLECTOR,
    prometheus_client.GC_COLLECTOR,
)


def _product_modules() -> Iterator[ModuleType]:
    """Every importable module of the product (entry points and gunicorn's config aside)."""
    for package in (services, shared):
        for found in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if found.name.endswith("__main__") or "gunicorn" in found.name:
                continue
            yield importlib.import_module(found.name)


def _names(collector: Collector | CollectorRegistry) -> set[str]:
    """Metric family names (a labelled metric that has no sample yet still has its family)."""
    return {family.name for family in collector.collect()}


def _library_names() -> set[str]:
    return set().union(*(_names(c) for c in LIBRARY))


def test_each_process_metrics_class_uses_the_prefix() -> None:
    classes = [
        obj
        for module in _product_modules()
        if module.__name__.endswith(".metrics")
        for obj in vars(module).values()
        if inspect.isclass(obj) and obj.__module__ == module.__name__
    ]
    assert len(classes) == 4, "one metrics class per process"
    for cls in classes:
        registry = CollectorRegistry()
        cls(registry)
        names = _names(registry)
        assert names, f"{cls.__name__} registers nothing"
        assert sorted(n for n in names if not n.startswith(PREFIX)) == [], cls.__name__


def test_nothing_on_the_default_registry_lacks_the_prefix() -> None:
    list(_product_modules())
    unprefixed = _names(REGISTRY) - _library_names()
    assert sorted(n for n in unprefixed if not n.startswith(PREFIX)) == []
    assert any(n.startswith(PREFIX) for n in unprefixed), "module-level metrics are seen"
