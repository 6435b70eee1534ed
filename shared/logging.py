"""Structured logs: one JSON object a line, with the branch, applier, token and GitTarget.

Operators grep and ship these lines; a fixed shape (``time``, ``level``, ``logger``,
``message`` and whatever context the call passed in ``extra``) keeps every process's output
machine-readable. Context keys are listed so that a typo in ``extra`` does not silently vanish.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

#: Context fields a log call may pass in ``extra`` (O2).
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


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in CONTEXT_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                entry[field] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, separators=(",", ":"))


def configure(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Send every logger's output, as JSON lines, to ``stream`` (default stderr)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
