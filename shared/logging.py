"""Structured logs: one JSON object a line, with the branch, applier, token and GitTarget.

Operators grep and ship these lines; a fixed shape (``time``, ``level``, ``logger``,
``message`` and whatever context the call passed in ``extra``) keeps every process's output
machine-readable. The usual context keys are listed (``CONTEXT_FIELDS``) so that they come
first, in one order; any other key a call passes in ``extra`` is written too, after them, so a
misspelt key shows up in the line under its wrong name instead of silently vanishing.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

#: Context fields log calls pass in ``extra`` (O2), written first and in this order.
CONTEXT_FIELDS = (
    "branch",
    "applier",
    "token",
    "gittarget",
    "provider",
    "delivery",
    "commit",
    "reason",
    "outcome",
    "worker",
)

#: What every LogRecord carries of its own; any other attribute came from ``extra``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
#: The fixed keys of every line; an ``extra`` key of the same name is written as ``extra.<key>``.
_FIXED = frozenset({"time", "level", "logger", "message", "exception"})


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in (*CONTEXT_FIELDS, *_extra_keys(record)):
            value = getattr(record, field, None)
            if value is not None:
                entry[f"extra.{field}" if field in _FIXED else field] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, separators=(",", ":"))


def _extra_keys(record: logging.LogRecord) -> list[str]:
    """Keys the call passed in ``extra`` that are not context fields (a typo, say), sorted."""
    return sorted(
        key
        for key in vars(record)
        if key not in _RECORD_ATTRIBUTES and key not in CONTEXT_FIELDS and key[:1] != "_"
    )


def configure(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Send every logger's output, as JSON lines, to ``stream`` (default stderr)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
