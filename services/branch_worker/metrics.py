"""The branch worker's metrics (O1): commits, pushes, conflicts, foreign commits, refusals."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

COMMITS = Counter("gitops_reverser_commits_total", "Commits made by branch workers")
PUSHES = Counter(
    "gitops_reverser_pushes_total", "CAS pushes by result (pushed, rejected)", ["result"]
)
FOREIGN_COMMITS = Counter(
    "gitops_reverser_foreign_commits_total", "Tips found that gitops-reverser did not push"
)
REFUSALS = Counter("gitops_reverser_refusals_total", "Edits refused (M10) by reason", ["reason"])
NOTICES = Counter(
    "gitops_reverser_notices_total", "Push notices read, by what they did", ["decision"]
)
OBLIGATIONS = Gauge(
    "gitops_reverser_obligations_owed",
    "Appliers of a branch owing each reason (A1), as its owner last decided",
    ["branch", "reason"],
)
QUIET_WAIT = Gauge(
    "gitops_reverser_quiet_wait_seconds",
    "How long something owed has waited for the branch to be quiet (Q4); 0 when nothing waits",
    ["branch"],
)
