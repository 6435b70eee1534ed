"""The Redis adapters a branch worker uses, built once per process from its settings."""

from __future__ import annotations

from dataclasses import dataclass

from shared.settings import Settings
from shared.store.api_edits import ApiEdits
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts
from shared.store.attribution import FactStreams
from shared.store.bells import Bells
from shared.store.branch_health import BranchHealth
from shared.store.branch_state import BranchStates
from shared.store.collisions import Collisions
from shared.store.commit_requests import CommitRequests
from shared.store.config import ConfigStore
from shared.store.connection import Client
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.ledger import Ledger
from shared.store.notice_reader import NoticeReader
from shared.store.streams import EventStream
from shared.store.workers import WorkerRegistry


@dataclass(frozen=True, slots=True)
class Stores:
    """The Redis adapters a worker uses."""

    events: EventStream
    states: BranchStates
    configs: ConfigStore
    leases: Leases
    registry: WorkerRegistry
    notices: NoticeReader
    appliers: ApplierStore
    attempts: Attempts
    health: BranchHealth
    ledger: Ledger
    collisions: Collisions
    commit_requests: CommitRequests
    facts: FactStreams
    api_edits: ApiEdits
    bells: Bells

    @classmethod
    def build(cls, client: Client, settings: Settings) -> Stores:
        keys = Keys(settings.key_prefix)
        period_ms = int(settings.lease_period.total_seconds() * 1000)
        return cls(
            EventStream(client, keys),
            BranchStates(client, keys),
            ConfigStore(client, keys),
            Leases(client, keys, period_ms),
            WorkerRegistry(client, keys),
            NoticeReader(client, keys),
            ApplierStore(client, keys),
            Attempts(
                client,
                keys,
                settings.apply_queue,
                result_ttl_s=int(settings.job_result_ttl.total_seconds()),
                failure_ttl_s=int(settings.job_failure_ttl.total_seconds()),
            ),
            BranchHealth(client, keys),
            Ledger(client, keys),
            Collisions(client, keys),
            CommitRequests(client, keys, settings.commit_request_ttl.total_seconds()),
            FactStreams(client, keys),
            ApiEdits(client, keys),
            Bells(client, keys),
        )
