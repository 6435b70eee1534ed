"""Who sends what to Redis while the product idles: ``MONITOR`` for a window, counted by command
and by process.

Each product process names its connections (``CLIENT SETNAME``: ``branch-worker:w0``,
``watcher``, ``receiver``, ``dispatcher``); the window starts with a ``CLIENT LIST`` that maps
every connection's address to its name. A command a Lua script runs is logged by Redis right
after the ``EVALSHA`` that ran it, on no connection (``lua``), so it is counted for the process
of the script that ran it; a name is shortened to the part before ``:`` for the process
totals (the four workers together), and kept whole for the per-worker lines.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from shared.store.connection import connect

#: The monitor's own connection, and the benchmark's: not counted.
OURS = ("bench", "bench-monitor")


@dataclass(frozen=True, slots=True)
class Attribution:
    """Commands seen in one window: by command, by process, by (process, command)."""

    seconds: float
    by_command: Counter[str]
    by_process: Counter[str]
    by_both: Counter[tuple[str, str]]

    def top(self, n: int = 12) -> list[tuple[str, str, float]]:
        """The ``n`` largest (process, command) pairs, per second."""
        return [(p, c, k / self.seconds) for (p, c), k in self.by_both.most_common(n)]


def _names(url: str) -> dict[str, str]:
    redis = connect(url, client_name="bench")
    try:
        return {str(c["addr"]): str(c.get("name") or "?") for c in redis.client_list()}
    finally:
        redis.close()


def attribute(url: str, seconds: float) -> Attribution:
    """MONITOR for ``seconds`` and count what every named process sent."""
    names = _names(url)
    by_command: Counter[str] = Counter()
    by_process: Counter[str] = Counter()
    by_both: Counter[tuple[str, str]] = Counter()
    stop = threading.Event()
    monitor_client = connect(url, client_name="bench-monitor")
    began = time.perf_counter()

    def listen() -> None:
        last = "?"
        with monitor_client.monitor() as monitor:  # type: ignore[no-untyped-call]
            for line in monitor.listen():
                if stop.is_set():
                    return
                _count(line, names, last, by_command, by_process, by_both)
                if line.get("client_type") != "lua":
                    last = names.get(_addr(line), "?")

    thread = threading.Thread(target=listen, name="bench-monitor", daemon=True)
    thread.start()
    time.sleep(seconds)  # the window itself: what the product sends while nothing is asked
    stop.set()
    elapsed = time.perf_counter() - began
    poke = connect(url, client_name="bench")
    try:
        poke.ping()  # one more line, so the listener sees ``stop``
    finally:
        poke.close()
    thread.join(timeout=10)
    monitor_client.close()
    return Attribution(elapsed, by_command, by_process, by_both)


def _addr(line: dict[str, Any]) -> str:
    return f"{line.get('client_address')}:{line.get('client_port')}"


def _count(  # noqa: PLR0917 (the counters are the window's, filled in place)
    line: dict[str, Any],
    names: dict[str, str],
    last: str,
    by_command: Counter[str],
    by_process: Counter[str],
    by_both: Counter[tuple[str, str]],
) -> None:
    lua = line.get("client_type") == "lua"
    name = last if lua else names.get(_addr(line), "?")
    if name in OURS:
        return
    command = str(line.get("command", "")).split(" ", 1)[0].upper()
    command = f"{command} (lua)" if lua else command
    by_command[command] += 1
    by_process[name.split(":", 1)[0]] += 1
    by_both[(name, command)] += 1
