"""Reading one upstream (``configbutler.ai``) object field by field, for ``convert``.

A ``Fields`` wraps a mapping and hands out its keys as they are mapped (``take``); whatever
is left when a kind's mapping is done has no equivalent and is refused (``rest``), so a field
this converter does not know (a later upstream release's) is refused by name rather than
dropped without a word. A refusal names the object and the field path as a person writes it
(``spec.rules[0].scope``). docs/migrating.md lists every field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: What a user reads after a refusal of a field our CRDs do not have.
NO_EQUIVALENT = "has no equivalent in gitopsreverser.io/v1alpha1"


class Refusal(Exception):
    """One field of one object that cannot be converted: its path and why."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field
        self.why = why


class Fields:
    """The keys of one mapping, taken one by one as they are converted."""

    def __init__(self, data: Any, path: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise Refusal(path, f"must be an object, not {type(data).__name__}")
        self._data = dict(data)
        self.path = path

    def at(self, key: str) -> str:
        """The path of ``key`` under this mapping."""
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self._data

    def take(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` (``default`` when absent), marked as converted."""
        return self._data.pop(key, default)

    def sub(self, key: str) -> Fields:
        """The mapping under ``key`` (empty when absent), marked as converted."""
        return Fields(self.take(key), self.at(key))

    def refuse(self, key: str, why: str = NO_EQUIVALENT) -> None:
        """Refuse ``key`` if it is present."""
        if key in self._data:
            raise Refusal(self.at(key), why)

    def refuse_unless(self, key: str, allowed: Any, why: str) -> None:
        """Refuse ``key`` unless it is absent or equal to ``allowed``; it is consumed."""
        if key in self._data and self._data[key] != allowed:
            raise Refusal(self.at(key), why)
        self._data.pop(key, None)

    def rest(self) -> None:
        """Refuse the first key that was not converted."""
        for key in sorted(self._data):
            raise Refusal(self.at(key), NO_EQUIVALENT)


def name_of(ref: Fields, kinds: tuple[str, ...], group: str | None = "configbutler.ai") -> str:
    """The ``name`` of an upstream reference, checking its optional ``group`` and ``kind``
    (``{group, kind, name}`` and Flux's ``{name}`` forms alike)."""
    if not ref.has("name"):
        raise Refusal(ref.path, "is required: it has no name")
    name = ref.take("name")
    if not isinstance(name, str) or not name:
        raise Refusal(ref.at("name"), "must be a non-empty string")
    kind = ref.take("kind")
    if kind not in (None, "", *kinds):
        raise Refusal(ref.at("kind"), f"must be {' or '.join(kinds)}, not {kind!r}")
    grp = ref.take("group")
    if grp not in (None, "", group):
        raise Refusal(ref.at("group"), f"must be {group or 'empty'!r}, not {grp!r}")
    return name


def put(target: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` unless ``value`` is absent (None), so absent stays absent."""
    if value is not None:
        target[key] = value
