"""The branch worker's metrics (O1): commits, pushes, foreign commits, refusals, notices, waits,
apply-window collisions (W3).

Defined as the other processes define theirs: a class whose metrics live on the registry it is
given, so a test can build its own. The branch loops are not yet handed an instance, so the
process's one instance and its metrics are also module names here (``COMMITS`` ...).
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram


class BranchWorkerMetrics:
    """What the owners of branches did and what they wait for."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.commits = Counter(
            "gitops_reverser_commits_total", "Commits made by branch workers", registry=registry
        )
        self.pushes = Counter(
            "gitops_reverser_pushes_total",
            "CAS pushes by result (pushed, rejected)",
            ["result"],
            registry=registry,
        )
        self.foreign_commits = Counter(
            "gitops_reverser_foreign_commits_total",
            "Tips found that gitops-reverser did not push",
            registry=registry,
        )
        self.refusals = Counter(
            "gitops_reverser_refusals_total",
            "Edits refused (M10) by reason",
            ["reason"],
            registry=registry,
        )
        self.notices = Counter(
            "gitops_reverser_notices_total",
            "Push notices read, by what they did",
            ["decision"],
            registry=registry,
        )
        self.obligations = Gauge(
            "gitops_reverser_obligations_owed",
            "Appliers of a branch owing each reason (A1), as its owner last decided",
            ["branch", "reason"],
            registry=registry,
        )
        self.quiet_wait = Gauge(
            "gitops_reverser_quiet_wait_seconds",
            "How long something owed has waited for the branch to be quiet (Q4); 0 when nothing "
            "waits",
            ["branch"],
            registry=registry,
        )
        self.apply_window_collisions = Counter(
            "gitops_reverser_apply_window_collisions_total",
            "Object events the apply window judged a collision (W3): withheld (not mirrored), "
            "historical (an older commit's content, not mirrored) or ambiguous (a same-second "
            "tie, mirrored)",
            ["outcome"],
            registry=registry,
        )
        self.attribution_resolutions = Counter(
            "gitops_reverser_attribution_resolutions_total",
            "Object events joined to an audit fact, by tier (absent: unresolved) and actor kind",
            ["tier", "actor_kind", "group", "version", "resource"],
            registry=registry,
        )
        self.attribution_wait = Histogram(
            "gitops_reverser_attribution_resolution_wait_seconds",
            "Time from an owner's first look at an object event to its join (the grace counts "
            "it), by tier and event kind",
            ["tier", "event_kind", "group", "version", "resource"],
            buckets=(0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0),
            registry=registry,
        )
        self.attribution_facts = Counter(
            "gitops_reverser_attribution_facts_total",
            "Audit facts read by branch owners from the fact streams (op: read)",
            ["op"],
            registry=registry,
        )
        self.attribution_evictions = Counter(
            "gitops_reverser_attribution_fact_index_evictions_total",
            "Facts dropped from an owner's in-memory index, by reason (ttl, capacity)",
            ["reason"],
            registry=registry,
        )
        self.attribution_decode_errors = Counter(
            "gitops_reverser_attribution_fact_stream_decode_errors_total",
            "Fact stream entries that could not be decoded (skipped), by transport",
            ["transport"],
            registry=registry,
        )
        self.owned_branches = Gauge(
            "gitops_reverser_owned_branches",
            "Branches this worker holds the lease of and works",
            registry=registry,
        )
        self.busy_threads = Gauge(
            "gitops_reverser_busy_threads",
            "Pool threads running a branch's pass or start (at most branch_threads)",
            registry=registry,
        )
        self.waiting_branches = Gauge(
            "gitops_reverser_waiting_branches",
            "Branches whose pass or start waits for a free pool thread",
            registry=registry,
        )


METRICS = BranchWorkerMetrics()
COMMITS = METRICS.commits
PUSHES = METRICS.pushes
FOREIGN_COMMITS = METRICS.foreign_commits
REFUSALS = METRICS.refusals
NOTICES = METRICS.notices
OBLIGATIONS = METRICS.obligations
QUIET_WAIT = METRICS.quiet_wait
APPLY_WINDOW_COLLISIONS = METRICS.apply_window_collisions
ATTRIBUTION_RESOLUTIONS = METRICS.attribution_resolutions
ATTRIBUTION_WAIT = METRICS.attribution_wait
ATTRIBUTION_FACTS = METRICS.attribution_facts
ATTRIBUTION_EVICTIONS = METRICS.attribution_evictions
ATTRIBUTION_DECODE_ERRORS = METRICS.attribution_decode_errors
OWNED_BRANCHES = METRICS.owned_branches
BUSY_THREADS = METRICS.busy_threads
WAITING_BRANCHES = METRICS.waiting_branches
