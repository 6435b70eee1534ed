"""Each applier's obligations, attempt out and backoff (A1-A5), kept in ``applier:{ak}``.

Updates are read-modify-write under WATCH, so two workers of sibling branches sharing one
Kustomization (A3) never lose each other's obligations. The record is the pure
``shared.decide.obligations.Applier`` as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import redis

from shared.decide.obligations import Applier, ApplierKind, Attempt, Reason
from shared.model.ids import ApplierKey
from shared.store.keys import Keys


def encode(applier: Applier) -> str:
    """The applier as stable JSON."""
    attempt = applier.attempt
    data: dict[str, Any] = {
        "kind": applier.kind,
        "foreign_commit": applier.foreign_commit,
        "foreign_uids": sorted(applier.foreign_uids),
        "refusals": sorted(applier.refusals),
        "catch_up": applier.catch_up,
        "catch_up_uids": sorted(applier.catch_up_uids),
        "failures": applier.failures,
        "next_try_at": applier.next_try_at,
        "quiet_periods": dict(sorted(applier.quiet_periods.items())),
        "attempt": None
        if attempt is None
        else {
            "token": attempt.token,
            "commit": attempt.commit,
            "sent_at": attempt.sent_at,
            "deadline": attempt.deadline,
            "reasons": {r: sorted(u) for r, u in attempt.reasons.items()},
        },
    }
    return json.dumps(data, sort_keys=True)


def decode(text: str) -> Applier:
    """The inverse of ``encode``."""
    data = json.loads(text)
    raw = data.get("attempt")
    attempt = None
    if raw:
        reasons: dict[Reason, frozenset[str]] = {r: frozenset(u) for r, u in raw["reasons"].items()}
        attempt = Attempt(raw["token"], raw["commit"], reasons, raw["sent_at"], raw["deadline"])
    return Applier(
        kind=data["kind"],
        foreign_commit=data["foreign_commit"],
        foreign_uids=frozenset(data["foreign_uids"]),
        refusals=frozenset(data["refusals"]),
        catch_up=data["catch_up"],
        catch_up_uids=frozenset(data["catch_up_uids"]),
        attempt=attempt,
        failures=data["failures"],
        next_try_at=data["next_try_at"],
        quiet_periods=data["quiet_periods"],
    )


class ApplierStore:
    """Load and atomically update appliers."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def load(self, ak: ApplierKey, kind: ApplierKind) -> Applier:
        """The applier's record, or an empty one."""
        text = self._r.get(self._keys.applier(ak))
        return decode(str(text)) if text else Applier(kind)

    def update(
        self, ak: ApplierKey, kind: ApplierKind, change: Callable[[Applier], Applier]
    ) -> Applier:
        """Apply ``change`` to the stored record atomically; returns the new record."""
        key = self._keys.applier(ak)
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)  # type: ignore[no-untyped-call]
                    text = pipe.get(key)
                    current = decode(str(text)) if text else Applier(kind)
                    new = change(current)
                    pipe.multi()
                    if new.owes() or new.attempt or new.failures:
                        pipe.set(key, encode(new))
                    else:
                        pipe.delete(key)  # nothing owed, nothing out: no key (no TTL needed)
                    pipe.execute()
                    return new
                except redis.WatchError:
                    continue
