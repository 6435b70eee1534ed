"""What a test that outran its time limit was doing, shown in the run's summary.

pytest-timeout (``timeout_method = "thread"`` in pyproject.toml) ends a test that outruns its
limit by ending its process: under pytest-xdist the worker is replaced and the run goes on, but
its stack dump goes to the worker's captured output, which is lost with the worker. So each test
here arms :func:`faulthandler.dump_traceback_later` a little before its limit, writing every
thread's stack to a file of its own in a folder the controller made; the controller prints
those files at the end of the run. A test that ends in time removes its file.
"""

from __future__ import annotations

import faulthandler
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.terminal import TerminalReporter

#: The folder the controller made (its workers inherit the variable).
FOLDER_ENV = "PYTEST_HANGS_FOLDER"  # not GITOPS_REVERSER_: the settings refuse unknown ones
#: How long before its limit a test's threads are written down.
AHEAD_S = 10.0


def configure(config: pytest.Config) -> None:
    """The controller (or a run without workers) makes the folder, once."""
    if not hasattr(config, "workerinput") and FOLDER_ENV not in os.environ:
        os.environ[FOLDER_ENV] = tempfile.mkdtemp(prefix="pytest-hangs-")


def limit_of(item: pytest.Item) -> float:
    """The test's time limit as pytest-timeout reads it (its marker, else the ini value)."""
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        value = marker.args[0] if marker.args else marker.kwargs.get("timeout", 0)
    else:
        value = item.config.getini("timeout") or 0
    return float(value or 0)


def watch(item: pytest.Item) -> Iterator[None]:
    """Around one test's setup, call and teardown: its threads go to a file near its limit."""
    limit = limit_of(item)
    folder = os.environ.get(FOLDER_ENV)
    if limit <= 0 or not folder or not Path(folder).is_dir():
        yield
        return
    path = Path(folder) / f"{uuid.uuid4().hex}.txt"
    header = f"{item.nodeid} (limit {limit:g} s, pid {os.getpid()})\n"
    with path.open("w") as sink:
        sink.write(header)
        sink.flush()
        faulthandler.dump_traceback_later(max(limit - AHEAD_S, limit * 0.9), file=sink)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()
    if path.stat().st_size <= len(header.encode()):
        path.unlink()  # ended in time: nothing was written


def summarize(terminalreporter: TerminalReporter) -> None:
    """Print what each test that neared its limit was doing."""
    folder = os.environ.get(FOLDER_ENV)
    if not folder or not Path(folder).is_dir():
        return
    for path in sorted(Path(folder).glob("*.txt")):
        text = path.read_text(errors="replace")
        first, _, stacks = text.partition("\n")
        terminalreporter.write_sep("!", f"NEAR ITS TIME LIMIT: {first}", red=True, bold=True)
        terminalreporter.write_line(stacks)
