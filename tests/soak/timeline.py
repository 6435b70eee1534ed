"""A lost edit's timeline, printed when the soak fails: who wrote the object, and what the
editor, the dispatcher (stamps) and Flux (its activity log) did around its last edit.

Every time is ``time.time()`` of the soak's process (the Flux doubles run in it too).
"""

from __future__ import annotations

from collections.abc import Callable

from kubernetes.client.exceptions import ApiException

from sandbox.flux.activity import Record
from tests.e2e.conftest import ApplierTenant
from tests.soak.stamps import Stamp

History = list[tuple[float, str, str, str, str | None]]
#: Seconds around an object's last edit shown in its timeline.
AROUND_S = 20.0


def timeline(
    tenant: ApplierTenant,
    name: str,
    *,
    history: History,
    stamps: list[Stamp],
    flux: list[Record],
    kills: list[str],
    say: Callable[[str], None],
) -> None:
    """Print what happened to ``name`` in ``tenant``'s namespace near its last edit."""
    mine = [h for h in history if h[2] == tenant.ns and h[3] == name]
    if not mine:
        return
    last = mine[-1][0]
    lines = [(t, f"edit {kind} {value}") for t, kind, _, _, value in mine[-3:]]
    lines += [
        (s.seen_at, f"stamp {s.plural} {s.token}") for s in stamps if s.namespace == tenant.ns
    ]
    lines += [
        (r.time, f"flux {r.kind} {r.action} {r.revision} {list(r.changes)[:4]}")
        for r in flux
        if r.namespace == tenant.ns
    ]
    lines += [(float(k.split("(")[1].split(")")[0]), k.split(")", 1)[1]) for k in kills]
    say(f"timeline of {tenant.ns}/{name} (last edit at {last:.1f}):")
    for at, text in sorted(lines):
        if abs(at - last) <= AROUND_S:
            say(f"  {at - last:+7.2f}s {text}")
    try:
        found = tenant.system.core.read_namespaced_config_map(name, tenant.ns)
    except ApiException as err:
        say(f"  now: {err.status}")
        return
    for entry in found.metadata.managed_fields or []:
        say(f"  managedFields: {entry.manager} {entry.operation} {entry.time}")
