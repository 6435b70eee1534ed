"""Every process starts and stops the same way (shared/process.py; conventions.md 10)."""

from __future__ import annotations

import io
import signal
from collections.abc import Iterator
from typing import NoReturn

import pytest

from shared import process


class _Exited(Exception):
    """Stands in for os._exit, which a test cannot survive."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.code = process.signal_exit_code(signum)


def _exit_now(signum: int) -> NoReturn:
    raise _Exited(signum)


def test_a_bad_setting_exits_2_with_one_line_naming_the_variable() -> None:
    stderr = io.StringIO()
    with pytest.raises(SystemExit) as raised:
        process.load_settings_or_exit(
            "watcher", {"GITOPS_REVERSER_LOG_LEVEL": "loud"}, stderr=stderr
        )
    assert raised.value.code == process.EXIT_SETTINGS == 2
    lines = stderr.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("watcher: GITOPS_REVERSER_LOG_LEVEL")


def test_good_settings_are_returned() -> None:
    settings = process.load_settings_or_exit("watcher", {"GITOPS_REVERSER_KEY_PREFIX": "p"})
    assert settings.key_prefix == "p"


def test_the_first_signal_asks_for_a_clean_stop() -> None:
    asked: list[str] = []
    shutdown = process.Shutdown(lambda: asked.append("stop"), exit_now=_exit_now)
    shutdown(signal.SIGTERM)
    assert asked == ["stop"]
    assert shutdown.requested


def test_the_second_signal_exits_at_once_with_128_plus_the_signal() -> None:
    asked: list[str] = []
    shutdown = process.Shutdown(lambda: asked.append("stop"), exit_now=_exit_now)
    shutdown(signal.SIGINT)
    with pytest.raises(_Exited) as exited:
        shutdown(signal.SIGTERM)
    assert exited.value.code == 128 + signal.SIGTERM
    assert asked == ["stop"]


@pytest.fixture
def saved_handlers() -> Iterator[None]:
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


@pytest.mark.usefixtures("saved_handlers")
def test_install_handles_sigterm_and_sigint() -> None:
    shutdown = process.Shutdown(lambda: None, exit_now=_exit_now)
    shutdown.install()
    assert signal.getsignal(signal.SIGTERM) is shutdown
    assert signal.getsignal(signal.SIGINT) is shutdown
