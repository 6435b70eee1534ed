"""How a patch is refused, in the status, reason and words of the real kube-apiserver.

Why it exists: the patch engines (``patching``, ``strategic``) share one error type and a few
helpers that word failures the way Go code does (type names of ``encoding/json``, ``%v`` of a
map), because clients and people read these messages. Sources:

- k8s.io/apimachinery ``api/errors`` ``NewBadRequest`` (400 BadRequest) and
  ``NewGenericServerResponse(422, ...)`` (reason Invalid, message "the server rejected our
  request due to an error in our request", server text dropped);
- apiserver ``responsewriters`` ``ErrorToAPIStatus``: an error that is not an API status is a
  500 with reason ``""`` (StatusReasonUnknown) and the error text as message.
"""

from __future__ import annotations

from typing import Any

from sandbox.kube.errors import ApiError

#: NewGenericServerResponse's message for 422 (k8s.io/apimachinery pkg/api/errors/errors.go).
UNPROCESSABLE_MESSAGE = "the server rejected our request due to an error in our request"


class PatchError(ApiError):
    """A refused patch: ``status`` 400, 413, 422 or 500, ``reason`` and ``message`` as sent.

    ``detail`` keeps the patch library's own text when the real server drops it (422 of a
    failed JSON patch operation), so tests and logs can still say which operation failed.
    """

    detail: str = ""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(status, reason, message, details={})

    @property
    def status(self) -> int:
        """The HTTP status code (the ``code`` of the Status)."""
        return self.code


def bad_request(message: str) -> PatchError:
    """``errors.NewBadRequest``."""
    return PatchError(400, "BadRequest", message)


def unprocessable(detail: str) -> PatchError:
    """``errors.NewGenericServerResponse(422, ...)``: the library's text is not sent."""
    error = PatchError(422, "Invalid", UNPROCESSABLE_MESSAGE)
    error.detail = detail
    return error


def internal(message: str) -> PatchError:
    """A plain Go error reaching ``ErrorToAPIStatus``: 500, reason Unknown (empty)."""
    return PatchError(500, "", message)


def go_type_name(value: Any) -> str:
    """What ``encoding/json`` calls a JSON value in "cannot unmarshal X into ..." errors."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "null"


def go_format(value: Any) -> str:
    """``fmt.Sprintf("%v", value)`` for decoded JSON (maps print with sorted keys)."""
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def scalar_key(value: Any) -> tuple[str, Any]:
    """A hashable identity equal exactly when Go's ``==`` on decoded JSON is true."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null", None)
    return ("other", id(value))


def json_equal(left: Any, right: Any) -> bool:
    """Deep JSON equality: 1 == 1.0, but true != 1 (Python's ``==`` conflates those)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict | list) or isinstance(right, dict | list):
        return False
    return scalar_key(left) == scalar_key(right)
