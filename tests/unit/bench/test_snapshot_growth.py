"""The snapshot bench's growth chart: each process's peak over its idle resident set and Redis's
growth, in MiB, undivided (the cost per object is the slope, a fixed cost the offset)."""

from __future__ import annotations

from bench.snapshot import MIB, Memory, Run, growth_series


def _run(objects: int, watcher: int, worker: int) -> Run:
    idle = {"watcher": Memory(hwm=90 * MIB, rss=70 * MIB), "branch_worker": Memory(0, 80 * MIB)}
    done = {
        "watcher": Memory(hwm=70 * MIB + watcher, rss=1),
        "branch_worker": Memory(hwm=80 * MIB + worker, rss=1),
    }
    return Run(objects, 1.0, 1, idle, done, 5 * MIB, 5 * MIB + 4 * objects, 5 * MIB + objects)


def test_growth_is_peak_less_idle_resident_in_mib_for_each_process_and_redis() -> None:
    series = growth_series([_run(1_000, 2 * MIB, 3 * MIB), _run(4_000, 8 * MIB, 12 * MIB)])
    assert series == {
        "watcher (VmHWM)": [(1_000, 2.0), (4_000, 8.0)],
        "branch_worker (VmHWM)": [(1_000, 3.0), (4_000, 12.0)],
        "Redis, peak": [(1_000, 4_000 / MIB), (4_000, 16_000 / MIB)],
        "Redis, pushed": [(1_000, 1_000 / MIB), (4_000, 4_000 / MIB)],
    }
