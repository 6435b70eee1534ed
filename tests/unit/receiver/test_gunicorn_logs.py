"""gunicorn's own lines are JSON like the product's (issue 26 §5): the arbiter's and workers'
(``gunicorn.error``) and, when an access log is asked for, one per request
(``gunicorn.access``) with its fields."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from gunicorn.config import Config

from services.receiver.gunicorn_logs import JsonLogger


def _logger(**settings: Any) -> JsonLogger:
    cfg = Config()
    for name, value in settings.items():
        cfg.set(name, value)
    return JsonLogger(cfg)


def test_error_lines_are_json(capsys: pytest.CaptureFixture[str]) -> None:
    log = _logger()
    log.info("Listening at: %s (%s)", "http://127.0.0.1:8080", 42)
    log.critical("WORKER TIMEOUT (pid:%s)", 43)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(e["level"], e["logger"], e["message"]) for e in lines] == [
        ("INFO", "gunicorn.error", "Listening at: http://127.0.0.1:8080 (42)"),
        ("CRITICAL", "gunicorn.error", "WORKER TIMEOUT (pid:43)"),
    ]


def test_access_lines_are_json_with_fields_when_asked_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = _logger(accesslog="-")
    response = SimpleNamespace(status="401 UNAUTHORIZED", headers=[], sent=80)
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/hook/abc", "REMOTE_ADDR": "10.0.0.7"}
    log.access(response, SimpleNamespace(headers=[]), environ, timedelta(milliseconds=12.5))
    (line,) = capsys.readouterr().out.splitlines()
    entry = json.loads(line)
    assert entry["logger"] == "gunicorn.access"
    assert entry["message"] == "POST /hook/abc 401"
    assert (entry["method"], entry["path"], entry["status"]) == ("POST", "/hook/abc", 401)
    assert (entry["duration_ms"], entry["remote"]) == (12.5, "10.0.0.7")


def test_no_access_lines_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    log = _logger()
    response = SimpleNamespace(status="200 OK", headers=[], sent=2)
    log.access(response, SimpleNamespace(headers=[]), {"PATH_INFO": "/"}, timedelta(0))
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")
