"""Work folders left by earlier branch-worker processes on this host (N12).

A worker clones its branches under ``<work_dir>/<id>/``, and its default id is
``<hostname>-<pid>``: every start outside Kubernetes (a Procfile, systemd, a crash loop) gets a
new folder, and nothing removed the old ones, so a crash loop filled the disk one full set of
clones at a time. At start a worker removes the folders of this host's earlier ids whose
process is gone. A folder is kept whenever it may be in use: its process still runs (or its
pid was taken by another process: kept, the safe side), it is this worker's own, or its name is
not of the ``<hostname>-<pid>`` form (an ``--id`` chosen by hand, another host's worker on a
shared volume).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


def pid_running(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (owned by anyone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def stale_folders(
    work_dir: Path, hostname: str, own_id: str, running: Callable[[int], bool] = pid_running
) -> list[Path]:
    """The folders under ``work_dir`` of this host's default ids whose process is gone."""
    if not work_dir.is_dir():
        return []
    prefix = f"{hostname}-"
    stale = []
    for child in sorted(work_dir.iterdir()):
        name = child.name
        if name == own_id or not name.startswith(prefix) or child.is_symlink():
            continue
        pid = name[len(prefix) :]
        if pid.isdigit() and child.is_dir() and not running(int(pid)):
            stale.append(child)
    return stale


def remove_stale(work_dir: Path, hostname: str, own_id: str) -> list[Path]:
    """Remove the stale folders (``stale_folders``); returns them."""
    stale = stale_folders(work_dir, hostname, own_id)
    for folder in stale:
        shutil.rmtree(folder, ignore_errors=True)
        log.info("removed the work folder of an earlier worker: %s", folder)
    return stale
