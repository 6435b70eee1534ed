"""Field errors worded exactly as the Kubernetes API server words them.

A 422 from the real server carries one ``StatusCause`` per field error: ``field`` is the
``field.Path`` string (``"<nil>"`` for the object itself), ``reason`` the error type and
``message`` the error *body* (``field.Error.ErrorBody()`` in
``k8s.io/apimachinery/pkg/util/validation/field/errors.go``): the type's words, then the bad
value as Go prints it, then the detail. Clients and tests match on these strings, so the
sandbox builds them the same way, Go value formatting included.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
TYPE_INVALID = "FieldValueTypeInvalid"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"

# The path string of a nil ``*field.Path``: errors about the object as a whole carry it.
ROOT_FIELD = "<nil>"

# Go's strconv 'g' formatting with the shortest precision switches to an exponent from 1e+06.
_GO_EXPONENT_FROM = 6


@dataclass(frozen=True, slots=True)
class FieldError:
    """One cause of a 422 Invalid answer.

    ``message`` is the error body as the server words it, except for a failed CEL rule, where
    it is the rule's own message (or evaluated messageExpression, or ``failed rule: <rule>``)
    and ``body`` holds the full body the server puts in the StatusCause
    (``Invalid value: "object": <message>``). ``status_message`` is always the latter.
    """

    field: str
    reason: str
    message: str
    body: str = ""

    @property
    def status_message(self) -> str:
        """The StatusCause ``message`` exactly as kube-apiserver words it."""
        return self.body or self.message


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (close enough: JSON escaping of a UTF-8 string)."""
    return json.dumps(text, ensure_ascii=False)


def go_float(number: float) -> str:
    """Go's ``%v`` of a float64: shortest digits, exponent form from 1e+06 or below 1e-04."""
    if math.isnan(number):
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "+Inf" if number > 0 else "-Inf"
    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(str(d) for d in digits)
    point = len(text) + exponent  # position of the decimal point in the digit string
    prefix = "-" if sign else ""
    if number == 0:
        return prefix + "0"
    if point - 1 < -4 or point - 1 >= _GO_EXPONENT_FROM:
        return prefix + _go_exponent(text, point - 1)
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def _go_exponent(digits: str, power: int) -> str:
    """``d.ddde+XX`` as strconv writes it (at least two exponent digits)."""
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"


def go_sharp_v(value: Any) -> str:
    """Go's ``%#v`` of a decoded JSON value (how a map or list bad value is printed)."""
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(k)}:{go_sharp_v(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_sharp_v(v) for v in value) + "}"
    if value is None:
        return "interface {}(nil)"
    return go_scalar(value)


def go_scalar(value: Any) -> str:
    """Go's ``%v`` of a JSON scalar, strings quoted as ``%q`` does."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    return go_quote(str(value))


def bad_value(value: Any) -> str:
    """How ``ErrorBody`` prints a bad value: null as ``"null"``, compound values as ``%#v``."""
    if value is None:
        return '"null"'
    if isinstance(value, dict | list):
        return go_sharp_v(value)
    return go_scalar(value)


def json_text(value: Any) -> str:
    """``json.Marshal`` of a value, as the server prints non-string enum members."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _with_detail(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head


def required(field: str, detail: str = "") -> FieldError:
    """``field.Required``."""
    return FieldError(field, REQUIRED, _with_detail("Required value", detail))


def forbidden(field: str, detail: str) -> FieldError:
    """``field.Forbidden``."""
    return FieldError(field, FORBIDDEN, _with_detail("Forbidden", detail))


def invalid(field: str, value: Any, detail: str) -> FieldError:
    """``field.Invalid``."""
    return FieldError(field, INVALID, _with_detail(f"Invalid value: {bad_value(value)}", detail))


def type_invalid(field: str, value: Any, detail: str) -> FieldError:
    """``field.TypeInvalid``: worded as Invalid value, typed as FieldValueTypeInvalid."""
    head = f"Invalid value: {bad_value(value)}"
    return FieldError(field, TYPE_INVALID, _with_detail(head, detail))


def not_supported(field: str, value: Any, allowed: list[str]) -> FieldError:
    """``field.NotSupported``: the allowed values quoted and joined."""
    detail = "supported values: " + ", ".join(go_quote(v) for v in allowed) if allowed else ""
    head = f"Unsupported value: {bad_value(value)}"
    return FieldError(field, NOT_SUPPORTED, _with_detail(head, detail))


def too_long(field: str, max_length: int) -> FieldError:
    """``field.TooLong`` as of Kubernetes 1.32 (kubernetes/kubernetes#128553)."""
    detail = f"may not be more than {max_length} bytes" if max_length >= 0 else "value is too long"
    return FieldError(field, TOO_LONG, f"Too long: {detail}")


def too_many(field: str, actual: int, maximum: int) -> FieldError:
    """``field.TooMany``."""
    return FieldError(field, TOO_MANY, f"Too many: {actual}: must have at most {maximum} items")


def duplicate(field: str, value: Any) -> FieldError:
    """``field.Duplicate``."""
    return FieldError(field, DUPLICATE, f"Duplicate value: {bad_value(value)}")


def child(path: str, name: str) -> str:
    """``field.Path.Child``: a dotted step (from the root, no leading dot)."""
    return name if path == ROOT_FIELD else f"{path}.{name}"


def index(path: str, position: int) -> str:
    """``field.Path.Index``: ``[i]``."""
    return f"{'' if path == ROOT_FIELD else path}[{position}]"


def key(path: str, name: str) -> str:
    """``field.Path.Key``: ``[key]``, unquoted, for a map entry."""
    return f"{'' if path == ROOT_FIELD else path}[{name}]"
