"""The ledger entry: the last apply request that served a GitTarget, and how it ended (S3).

One record travels the whole way: the dispatcher builds it when an attempt ends
(``LastRequest.of``), ``shared.store.ledger`` keeps it as JSON per GitTarget incarnation, and
the watcher shows it as ``status.applier.lastRequest`` (``to_status``). The JSON keeps the
record's own names and epoch seconds, like the other records in Redis; only ``to_status``
speaks the CRD's camelCase and RFC 3339, so the CRD's shape is written in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.model.appliers import OUTCOMES, REASONS, Outcome, Reason
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.model.times import rfc3339

#: Longest outcome message kept. The CRD allows 32 KiB, but the entry is copied into the
#: status of every GitTarget the request served, so a long error is cut to what a person reads.
MAX_MESSAGE = 1000


@dataclass(frozen=True, slots=True)
class LastRequest:
    """One finished request as a GitTarget shows it: reasons sorted, times in epoch seconds."""

    token: str
    commit: str
    reasons: tuple[Reason, ...]
    sent_at: float
    finished_at: float
    outcome: Outcome
    message: str = ""

    @classmethod
    def of(cls, request: ApplyRequest, outcome: AttemptOutcome) -> LastRequest:
        """The entry for ``request`` ended by ``outcome`` (the message cut to MAX_MESSAGE)."""
        return cls(
            token=request.token,
            commit=request.commit,
            reasons=tuple(sorted(request.reasons)),
            sent_at=request.sent_at,
            finished_at=outcome.finished_at,
            outcome=outcome.outcome,
            message=outcome.message[:MAX_MESSAGE],
        )

    def to_json(self) -> str:
        """The JSON the ledger stores (keys sorted, so equal entries store equal text)."""
        data: dict[str, Any] = {
            "token": self.token,
            "commit": self.commit,
            "reasons": list(self.reasons),
            "sent_at": self.sent_at,
            "finished_at": self.finished_at,
            "outcome": self.outcome,
            "message": self.message,
        }
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LastRequest:
        """The inverse of ``to_json``; ValueError for anything ``to_json`` does not write."""
        try:
            data = json.loads(text)
            reasons = tuple(data["reasons"])
            outcome = data["outcome"]
            entry = cls(
                str(data["token"]),
                str(data["commit"]),
                reasons,
                float(data["sent_at"]),
                float(data["finished_at"]),
                outcome,
                str(data["message"]),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"malformed ledger entry: {err!r}") from err
        if outcome not in OUTCOMES or any(r not in REASONS for r in reasons):
            raise ValueError(f"malformed ledger entry: {outcome!r} for {reasons!r}")
        return entry

    def to_status(self) -> dict[str, Any]:
        """``status.applier.lastRequest`` as the GitTarget CRD defines it (no empty message)."""
        shown: dict[str, Any] = {
            "reasons": list(self.reasons),
            "commit": self.commit,
            "token": self.token,
            "sentAt": rfc3339(self.sent_at),
            "finishedAt": rfc3339(self.finished_at),
            "outcome": self.outcome,
        }
        if self.message:
            shown["message"] = self.message
        return shown
