"""The failover tier (issue 28): the Redis primary SIGKILLed during API edits, webhooks and
applies, with every process following Sentinel's promoted replica.

A real group from Debian's packages (``redis-server``, ``redis-sentinel``): a primary, two
replicas and three sentinels on free loopback ports, AOF on (tests/integration/redis_group.py).
Every process of the Procfile runs against it through ``redis+sentinel://`` with
``GITOPS_REVERSER_REDIS_MIN_REPLICAS=1`` (docs/install.md, "Redis with Sentinel"). The soak's
actors (tests/soak) edit ConfigMaps through the sandbox's API (Flux applies the edited
folders too), push from outside (the Git host's webhooks), and kill the primary, waiting for
the sentinels' ``+switch-master`` each time and starting the killed server again (it returns
as a replica). Then the soak's checks: every edit's final value reaches Git in exactly one
commit, no commit repeats another, no token is stamped twice, and no process exited on its
own (C9). A W2 tie is reported, not failed, as in the soak.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.e2e.system import System
from tests.integration.redis_group import PrimaryKiller
from tests.integration.redis_server import RedisServer
from tests.soak.test_chaos import DRAIN_S, JOIN_S, SEED, Soak, run_soak, soak_redis, soak_system

pytestmark = pytest.mark.e2e

#: Long enough for several failovers (a kill every 3-9 s, a failover in about 2 s), short
#: enough for ``make test``.
SECONDS = float(os.environ.get("FAILOVER_SECONDS", "60"))
FAILOVER = Soak(SECONDS, SEED, ("redis",), apply_edits=True, sentinel=True)


@pytest.fixture
def group(tmp_path: Path) -> Iterator[RedisServer | PrimaryKiller]:
    with soak_redis(tmp_path, sentinel=True) as target:
        yield target


@pytest.fixture
def system(
    tmp_path: Path, group: RedisServer | PrimaryKiller
) -> Iterator[tuple[System, redis.Redis]]:
    with soak_system(tmp_path, group, sentinel=True) as made:
        yield made


@pytest.mark.timeout(SECONDS + DRAIN_S + 2 * JOIN_S + 300)
def test_nothing_lost_or_repeated_while_the_redis_primary_fails_over(
    tmp_path: Path, group: RedisServer | PrimaryKiller, system: tuple[System, redis.Redis]
) -> None:
    assert isinstance(group, PrimaryKiller)
    problems = run_soak(tmp_path, group, system, FAILOVER)
    assert group.group.failovers, "the primary was never killed"
    assert not problems, f"seed {FAILOVER.seed}: " + "; ".join(problems)
