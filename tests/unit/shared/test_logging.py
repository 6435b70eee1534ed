"""Logs are one JSON object a line, carrying the context fields operators filter on (O2)."""

from __future__ import annotations

import io
import json
import logging

from shared.logging import configure


def test_one_json_object_per_line_with_context() -> None:
    stream = io.StringIO()
    configure("INFO", stream)
    log = logging.getLogger("gitops_reverser.test")
    log.info("pushed %s", "abc123", extra={"branch": "b1", "token": "t-1"})
    log.debug("not shown at INFO")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["message"] == "pushed abc123"
    assert entry["level"] == "INFO"
    assert entry["branch"] == "b1"
    assert entry["token"] == "t-1"
    assert "applier" not in entry


def test_exceptions_stay_on_one_line() -> None:
    stream = io.StringIO()
    configure("INFO", stream)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("x").exception("failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert "RuntimeError: boom" in json.loads(lines[0])["exception"]


def test_an_unlisted_extra_key_is_written_not_lost() -> None:
    """A misspelt context key shows up under its wrong name, where a reader can see it."""
    stream = io.StringIO()
    configure("INFO", stream)
    logging.getLogger("x").info("pushed", extra={"brnach": "b1", "level": "loud"})
    entry = json.loads(stream.getvalue())
    assert entry["brnach"] == "b1"
    assert entry["level"] == "INFO"
    assert entry["extra.level"] == "loud"
    assert "lineno" not in entry
