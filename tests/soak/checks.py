"""What the soak checks at the end, read from Git, the API server, Redis and the stamp log.

Definitions (each figure is printed, each check can fail):

- *Every API edit is in Git*: for every ConfigMap the editor touched, the file at the tip of
  its tenant's branch (``<path>/<ns>/configmaps/<name>.yaml``, M4) holds exactly the data of
  the editor's last write, and a deleted object has no file (prune OnEvent, the default). The
  cluster is compared too: an object the cluster holds differently from the editor's last
  write was overwritten by someone else (an applier), which is also a lost edit. Each loss is
  printed with its class (``losses.py``): a W2 tie is reported, any other loss fails.
- *No commit pushed twice*: every write carries a value no other write carries; that value
  is added (a ``+`` line of a commit's diff) by at most one commit on the branch, and the last
  value of each object by exactly one. Also, no two commits have the same ``git patch-id``.
  Intermediate values may be in no commit at all (M6: a window folds an object's writes into
  its latest state); how many made it is printed.
- *No attempt twice per token*: every ``requestedAt`` token is written as a new value at
  most once over every Flux object (``stamps.StampLog``), and no tenant has more
  ``ApplyRequested`` Events (one per stamp, S4) than stamps: a token stamped twice in a row
  does not change the value but leaves a second Event.
- *Redis memory back near its start*: ``used_memory`` after the drain is at most
  ``MEMORY_BOUND`` above what it was before the first edit.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import redis
import yaml
from rq import Queue

from tests.e2e.conftest import ApplierTenant, FluxTenant, git

#: How far above its start Redis's used_memory may end. What legitimately stays after a
#: drain: finished rq jobs (``job_result_ttl``, 10 minutes, ~6 KB each with their result
#: stream), outcome guards (a day and the job timeout, ~100 B per attempt) and replay guards
#: (~300 B per delivery, capped per GitProvider): a ten-minute soak makes a few hundred of
#: each, far below this bound; an undrained event stream or a leak per edit (thousands of
#: edits) is not.
MEMORY_BOUND = 2 * 1024 * 1024


def folder(tenant: ApplierTenant) -> str:
    return f"{tenant.tenant.path}/{tenant.ns}/configmaps"


def git_objects(tenant: ApplierTenant) -> dict[str, dict[str, str]]:
    """name -> data of every ConfigMap file in the tenant's folder at the tip (two git runs)."""
    bare = tenant.tenant.bare
    listed = git("ls-tree", "-r", "main", "--", folder(tenant), cwd=bare).splitlines()
    entries = [(line.split()[2], line.split("\t", 1)[1]) for line in listed]
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=bare,
        input="".join(f"{oid}\n" for oid, _ in entries).encode(),
        capture_output=True,
        check=True,
    ).stdout
    found = {}
    for _, path in entries:
        header, batch = batch.split(b"\n", 1)
        size = int(header.split()[2])
        document: dict[str, Any] = yaml.safe_load(batch[:size])
        batch = batch[size + 1 :]
        found[Path(path).stem] = dict(document.get("data") or {})
    return found


def cluster_objects(tenant: ApplierTenant) -> dict[str, dict[str, str]]:
    """name -> data of every ConfigMap in the tenant's namespace."""
    items = tenant.system.core.list_namespaced_config_map(tenant.ns).items
    return {str(cm.metadata.name): dict(cm.data or {}) for cm in items}


def expected(final: dict[tuple[str, str], str | None], ns: str) -> dict[str, dict[str, str]]:
    """name -> data the editor's last writes leave in ``ns``."""
    return {name: {"edit": v} for (n, name), v in final.items() if n == ns and v is not None}


def differences(want: dict[str, dict[str, str]], have: dict[str, dict[str, str]]) -> list[str]:
    """Objects missing, extra or different in ``have``."""
    found = [f"missing {name}" for name in sorted(want.keys() - have.keys())]
    found += [f"extra {name}" for name in sorted(have.keys() - want.keys())]
    found += [
        f"{name}: {have[name]} instead of {want[name]}"
        for name in sorted(want.keys() & have.keys())
        if want[name] != have[name]
    ]
    return found


def value_commits(bare: Path, seed: int) -> Counter[str]:
    """edit value -> how many commits on main add a line holding it."""
    pattern = re.compile(rf"^\+.*\b(e{seed}-\d{{6}})\b")
    counts: Counter[str] = Counter()
    added: set[str] = set()
    for line in git("log", "-p", "--format=commit %H", "main", cwd=bare).splitlines():
        if line.startswith("commit "):  # a commit's header: count what the last one added
            counts.update(added)
            added = set()
        elif match := pattern.match(line):
            added.add(match.group(1))
    counts.update(added)
    return counts


def repeated_patches(bare: Path) -> int:
    """How many commits on main repeat another commit's change (the same ``git patch-id``)."""
    log = subprocess.run(
        ["git", "log", "-p", "main"], cwd=bare, capture_output=True, check=True
    ).stdout
    ids = subprocess.run(
        ["git", "patch-id", "--stable"], input=log, capture_output=True, check=True
    ).stdout.decode()
    per = Counter(line.split()[0] for line in ids.splitlines() if line)
    return sum(n - 1 for n in per.values() if n > 1)


def drained(tenants: list[ApplierTenant], queue: Queue) -> list[str]:
    """What is still in flight: unacknowledged events, obligations, attempts; [] when quiet."""
    waiting = []
    for tenant in tenants:
        if tenant.events_handled() < 0:
            waiting.append(f"{tenant.ns}: events not all acknowledged")
        if not isinstance(tenant, FluxTenant):
            continue
        applier = tenant.obligations()
        if applier.owes() or applier.attempt is not None:
            waiting.append(f"{tenant.ns}: applier owed {sorted(applier.owes())}, {applier.attempt}")
    if queue.count:  # (a job a killed dispatcher held stays "started" until rq's cleanup)
        waiting.append(f"{queue.count} attempts queued")
    return waiting


def memory(client: redis.Redis) -> tuple[int, int]:
    """(used_memory, number of keys) of the soak's private Redis (its primary, with Sentinel),
    less what replication holds (the backlog and the replicas' output buffers: a primary
    promoted by a failover holds them afresh; a lone Redis holds none)."""
    info: dict[str, Any] = client.info("memory")
    replication = int(info.get("mem_replication_backlog", 0)) + int(
        info.get("mem_clients_slaves", 0)
    )
    return int(info["used_memory"]) - replication, int(client.dbsize())


def _family(key: bytes | str, prefix: str) -> str:
    """A key's family: the product's without its id, rq's by its first two parts."""
    name = key.decode() if isinstance(key, bytes) else str(key)
    if name.startswith(prefix + ":"):
        parts = name[len(prefix) + 1 :].split(":")
        return ":".join([parts[0], *parts[2:3]] if len(parts) > 2 else parts[:1])
    return ":".join(name.split(":")[:2])


def key_families(client: redis.Redis, prefix: str) -> Counter[str]:
    """Keys by family (``_family``)."""
    return Counter(_family(key, prefix) for key in client.scan_iter(count=1000))


def byte_families(client: redis.Redis, prefix: str) -> Counter[str]:
    """Bytes by family (``_family``): each key's ``MEMORY USAGE``."""
    families: Counter[str] = Counter()
    for key in client.scan_iter(count=1000):
        used = client.memory_usage(key)
        families[_family(key, prefix)] += int(used or 0)
    return families


#: The families of the attribution facts (``audit:facts:{route}:{resource}``, attribution on):
#: streams of every audited write, bounded by count (MAXLEN ~10,000 per route and resource)
#: and by their TTL, not by the drain; their growth is printed and not held to MEMORY_BOUND.
AUDIT_FAMILY = "audit:"
