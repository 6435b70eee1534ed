"""Apply requests and their outcomes, as they travel between branch worker and dispatcher.

A request is one ask to one applier (D1): a unique token, the commit it was decided at, its
reasons with the GitTarget uids that hold each, and the applier. The dispatcher answers with
exactly one outcome per token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from shared.model.appliers import OUTCOMES, REASONS, Outcome, Reason
from shared.model.config import ApplierRef
from shared.model.webhook import WebhookEndpoint


@dataclass(frozen=True, slots=True)
class ApplyRequest:
    """One attempt to send to the dispatcher."""

    token: str
    branch_key: str
    url: str
    branch: str
    commit: str
    reasons: dict[Reason, list[str]]
    applier: ApplierRef
    sent_at: float
    #: Where a ``Webhook`` applier is POSTed (D7); None for every other kind.
    webhook: WebhookEndpoint | None = None

    def to_json(self) -> str:
        """JSON for the rq job argument."""
        data: dict[str, Any] = {
            "token": self.token,
            "branch_key": self.branch_key,
            "url": self.url,
            "branch": self.branch,
            "commit": self.commit,
            "reasons": {r: sorted(u) for r, u in self.reasons.items()},
            "applier": self.applier.to_data(),
            "sent_at": self.sent_at,
        }
        if self.webhook is not None:
            data["webhook"] = self.webhook.to_data()
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ApplyRequest:
        """The inverse of ``to_json``; ValueError when malformed."""
        try:
            data = json.loads(text)
            reasons = {r: list(u) for r, u in data["reasons"].items() if r in REASONS}
            return cls(
                data["token"],
                data["branch_key"],
                data["url"],
                data["branch"],
                data["commit"],
                reasons,
                ApplierRef.from_data(data["applier"]),
                float(data["sent_at"]),
                WebhookEndpoint.from_data(data["webhook"]) if data.get("webhook") else None,
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"malformed apply request: {err}") from err


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """The dispatcher's one answer to a request."""

    token: str
    outcome: Outcome
    message: str = ""
    dropped: list[Reason] = field(default_factory=list)
    finished_at: float = 0.0

    def to_fields(self) -> dict[str, str]:
        """Flat fields for the outcomes stream."""
        return {
            "token": self.token,
            "outcome": self.outcome,
            "message": self.message,
            "dropped": json.dumps(self.dropped),
            "finished_at": repr(self.finished_at),
        }

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> AttemptOutcome:
        """The inverse of ``to_fields``; ValueError when malformed."""
        outcome = fields.get("outcome", "")
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        dropped = [r for r in json.loads(fields.get("dropped") or "[]") if r in REASONS]
        return cls(
            fields.get("token", ""),
            outcome,
            fields.get("message", ""),
            dropped,
            float(fields.get("finished_at") or 0.0),
        )
