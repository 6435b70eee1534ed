"""gunicorn's own log lines as JSON, like every other line of the product (issue 26 §5).

gunicorn writes its arbiter and worker lines (``gunicorn.error``: listening, booting, worker
timeouts) and, when an access log is asked for (``--access-logfile -``, or
``GUNICORN_CMD_ARGS``), one line per request (``gunicorn.access``) through handlers of its own
with text formats. ``JsonLogger`` keeps gunicorn's handlers (their streams, files, reopening)
and gives them ``shared.logging.JsonFormatter``; an access line carries ``method``, ``path``,
``status``, ``duration_ms`` and ``remote`` as fields. ``gunicorn.conf.py`` names it as
``logger_class``.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from gunicorn import glogging

from shared.logging import JsonFormatter


class JsonLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger, its lines formatted as JSON objects."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        formatter = JsonFormatter()
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(formatter)

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: timedelta) -> None:
        """One request, when an access log is configured: its fields, not a combined-log line."""
        if not self.access_log_enabled:
            return
        status = resp.status.split(None, 1)[0] if isinstance(resp.status, str) else resp.status
        method = environ.get("REQUEST_METHOD", "-")
        path = environ.get("PATH_INFO", "-")
        fields = {
            "method": method,
            "path": path,
            "status": int(status) if str(status).isdigit() else str(status),
            "duration_ms": round(request_time.total_seconds() * 1000, 3),
            "remote": environ.get("REMOTE_ADDR", "-"),
        }
        self.access_log.log(logging.INFO, "%s %s %s", method, path, status, extra=fields)
