"""``gitops-reverser-receiver`` (or ``python -m services.receiver``): the receiver under gunicorn.

The same as ``gunicorn -c services/receiver/gunicorn.conf.py "services.receiver.app:create_app()"``
run from a checkout, but found from the installed package, so the image and the chart start it
by one name from any working directory. Extra arguments go to gunicorn after the config file
(``--check-config``, say); the settings still come from ``GITOPS_REVERSER_*`` variables.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gunicorn.app.wsgiapp import WSGIApplication

#: The gunicorn settings file, beside this module in the installed package.
CONFIG = Path(__file__).with_name("gunicorn.conf.py")
#: The WSGI application gunicorn loads in each worker.
APP = "services.receiver.app:create_app()"


def argv(extra: list[str]) -> list[str]:
    """gunicorn's command line: our config file, then what the caller added, then the app."""
    return ["gitops-reverser-receiver", "-c", str(CONFIG), *extra, APP]


def main(extra: list[str] | None = None) -> int:
    """Run gunicorn in this process until it is stopped (gunicorn owns the signals)."""
    sys.argv = argv(sys.argv[1:] if extra is None else extra)
    WSGIApplication("%(prog)s [OPTIONS]", prog="gitops-reverser-receiver").run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
