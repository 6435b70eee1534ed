"""Validation of a custom resource against its CRD's structural schema, as kube-apiserver does.

The one entry point the API server double calls on create and update. The steps and their
order are the real server's: prune unknown fields (``prune``), drop forbidden nulls and apply
defaults (``schema_defaults``), validate the OpenAPI value rules (``openapi``), the embedded
resources (``embedded``) and the list-type invariants (``listtypes``), then evaluate the CEL
rules (``cel``) unless an earlier error means the object lacks the shape the rules were
written for (a type, required, enum or size violation): then, as
apiextensions-apiserver's ``customResourceStrategy`` does, one ``<nil>`` error says the rules
were skipped. On an update, unchanged parts are ratcheted (KEP-4008) and transition rules see
the stored object. Root ``apiVersion``, ``kind`` and ``metadata`` are the server's business:
never pruned here, never reported unknown.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sandbox.kube import cel, correlate, openapi
from sandbox.kube import fielderrors as fe
from sandbox.kube.embedded import validate_embedded
from sandbox.kube.fielderrors import FieldError
from sandbox.kube.listtypes import validate_lists
from sandbox.kube.prune import prune
from sandbox.kube.schema_defaults import apply_defaults, drop_nulls

__all__ = ["CEL_SKIPPED", "Checked", "FieldError", "check"]

# OpenAPI error types after which the server does not run the CEL rules (strategy.go,
# hasBlockingErr).
BLOCKING_REASONS = frozenset(
    {fe.NOT_SUPPORTED, fe.REQUIRED, fe.TOO_LONG, fe.TOO_MANY, fe.TYPE_INVALID}
)
CEL_SKIPPED = fe.invalid(
    fe.ROOT_FIELD,
    None,
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation",
)


@dataclass(frozen=True, slots=True)
class Checked:
    """The outcome of checking one object."""

    obj: dict[str, Any]  # a pruned and defaulted deep copy of the object
    unknown_fields: list[str]  # the paths pruning dropped, e.g. "spec.foo", sorted
    errors: list[FieldError]  # empty when the object is valid


def check(
    schema: Mapping[str, Any], obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> Checked:
    """Prune, default and validate ``obj`` against a CRD version's ``openAPIV3Schema``.

    ``old`` is the stored object on an update (None on a create). ``obj`` is not modified.
    """
    new: dict[str, Any] = copy.deepcopy(dict(obj))
    unknown = prune(new, schema)
    drop_nulls(new, schema)
    apply_defaults(new, schema)
    stored: Any = correlate.MISSING if old is None else old
    errors = openapi.validate(schema, new, stored)
    errors += validate_embedded(schema, new)
    if old is None or not validate_lists(schema, old):
        errors += validate_lists(schema, new)
    if cel.has_rules(schema):
        if any(error.reason in BLOCKING_REASONS for error in errors):
            errors.append(CEL_SKIPPED)
        else:
            errors += cel.validate_rules(schema, new, stored)
    return Checked(new, unknown, errors)
