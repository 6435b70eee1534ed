"""py-spy profiles of a benchmark's processes over one of its phases (a tool for people).

``BENCH_PYSPY_DIR=DIR`` makes a benchmark that supports it record each named process with
``py-spy record`` (``pip install py-spy`` into ``.venv``; it is not a dependency of the
product) for as long as the phase lasts, into ``DIR/<name>.txt`` in py-spy's collapsed-stack
format (one ``frame;frame;... count`` line per stack), and ``DIR/<name>.top.txt``: the
functions by samples in which they ran themselves and by samples that passed through them.
Unset, nothing is recorded and nothing is needed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

#: Samples per second (py-spy's default is 100; fewer keeps a 2-core machine's load down).
RATE = 50
TOP = 25


def directory() -> Path | None:
    """Where profiles go, or None when none is asked for."""
    found = os.environ.get("BENCH_PYSPY_DIR", "")
    return Path(found) if found else None


@contextmanager
def profiled(pids: Mapping[str, int], out: Path | None) -> Iterator[None]:
    """Record every process in ``pids`` (name -> pid) while the block runs."""
    if out is None:
        yield
        return
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise RuntimeError("BENCH_PYSPY_DIR is set but py-spy is not installed: pip install py-spy")
    out.mkdir(parents=True, exist_ok=True)
    # --subprocesses: a benchmark's processes are started through a shell (``sh -c``)
    record = [spy, "record", "--nonblocking", "--subprocesses", "--rate", str(RATE)]
    record += ["--format", "raw"]
    recorders = {
        name: subprocess.Popen(
            [*record, "--pid", str(pid), "--output", str(out / f"{name}.txt")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    }
    try:
        yield
    finally:
        for recorder in recorders.values():
            recorder.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
        for name, recorder in recorders.items():
            recorder.wait(timeout=60)
            raw = out / f"{name}.txt"
            if raw.exists():
                (out / f"{name}.top.txt").write_text(summary(raw.read_text()))


def summary(collapsed: str) -> str:
    """The top functions of a collapsed-stack profile, by self and by inclusive samples."""
    own: Counter[str] = Counter()
    through: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        frames = stack.split(";")
        own[frames[-1]] += samples
        for frame in set(frames):
            through[frame] += samples
    lines = [f"{total} samples"]
    for title, counter in (("self", own), ("inclusive", through)):
        lines.append(f"\n{title}:")
        for frame, samples in counter.most_common(TOP):
            lines.append(f"{100 * samples / max(total, 1):5.1f}%  {frame}")
    return "\n".join(lines) + "\n"
