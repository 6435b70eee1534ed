"""Fixtures every tier may use."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis
from _pytest.nodeid import NodeId
from _pytest.terminal import TerminalReporter
from hypothesis import HealthCheck, settings

from sandbox import paths
from shared.settings import Settings
from shared.store.connection import connect
from tests import hangs

#: A shared, busy machine slows every example down; a property test fails on a wrong answer,
#: never on the clock (a hung one is stopped by the per-test timeout instead). Under
#: pytest-xdist (make test-fast) the workers keep no example database: several processes
#: replaying and saving into one folder at once made hypothesis fail inside its own engine
#: (``assert i < len(self.spans)``) on tests that pass alone; a failing example is printed.
settings.register_profile(
    "gitops-reverser",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    **({"database": None} if os.environ.get("PYTEST_XDIST_WORKER") else {}),
)
settings.load_profile("gitops-reverser")


def pytest_configure(config: pytest.Config) -> None:
    hangs.configure(config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """A test that nears its time limit leaves its threads' stacks for the summary."""
    yield from hangs.watch(item)


#: Tiers that start the sandbox's API server, which serves the real Flux and Argo CD CRDs.
_TIERS_WITH_THE_SANDBOX = ("integration", "e2e", "soak", "image")


def _needs_third_party_crds(item: pytest.Item) -> bool:
    return "crds" in getattr(item, "fixturenames", ()) or any(
        tier in item.path.parts for tier in _TIERS_WITH_THE_SANDBOX
    )


#: Where the longest tests and groups live (make test-rest runs on pytest-xdist workers): they
#: are handed out first, longest first, so that none of them starts when the other workers are
#: nearly done; every other test keeps its place after them.
LONGEST_FIRST = (
    "tests/soak/",
    "tests/failover/",
    "tests/image/",
    "tests/integration/health/test_redis_minute.py",
    "tests/e2e/test_demo_e2e.py",
    "tests/e2e/",
    "tests/safety/",
)


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture made once per module (a running system, a Git host, a
    rendered chart): its module then runs on one worker, which makes it once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


def _rank(item: pytest.Item) -> int:
    return next(
        (i for i, where in enumerate(LONGEST_FIRST) if item.nodeid.startswith(where)),
        len(LONGEST_FIRST),
    )


# tryfirst: before pytest-xdist reads the groups (``--dist loadgroup``) on each worker
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop with one message when collected tests need ``../shared/crds`` and it is missing;
    keep the image tier on one worker (it builds the image once) and a module's tests on one
    worker when they share a module fixture (an ``xdist_group`` each, unless a test names
    one); hand the longest out first."""
    if any(_needs_third_party_crds(item) for item in items):
        try:
            paths.third_party_crd_files()
        except paths.MissingCrdsError as err:
            pytest.exit(str(err), returncode=pytest.ExitCode.USAGE_ERROR)
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            pass
        elif item.get_closest_marker("image") is not None:
            item.add_marker(pytest.mark.xdist_group("image"))  # one worker builds it, once
        elif _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        for item in items:
            _name_the_group(item)
    items.sort(key=_rank)  # stable: the order within each place is kept


def _name_the_group(item: pytest.Item) -> None:
    """Suffix the test's id with its ``xdist_group`` (``id@group``), which is how the
    controller's ``loadgroup`` scheduler knows the group. pytest-xdist 3.8 sets the suffix on
    ``item._nodeid``, which pytest 9 no longer reads (a node's id is ``item._id``): without
    this no group reached the controller, and a module's tests that share one fixture ran on
    different workers. Set where pytest 9 reads it, and checked, so a change of pytest's
    insides fails here rather than silently ungrouping."""
    names = sorted(
        {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
    )
    suffix = f"@{'_'.join(names)}"
    if not names or item.nodeid.endswith(suffix):
        return  # no group, or a pytest-xdist that sets the id itself
    grouped = item.nodeid + suffix
    item._id = NodeId.parse(grouped)
    assert item.nodeid == grouped, "pytest's node ids changed: see _name_the_group"


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """A real Redis (GITOPS_REVERSER_REDIS_URL; `make test` starts a private one)."""
    client = connect(Settings.from_env().redis_url, client_name="tests")
    try:
        client.ping()
    except redis.ConnectionError as err:
        pytest.fail(f"integration tests need Redis (run them with `make test`): {err}")
    yield client
    client.close()


@pytest.fixture
def key_prefix(redis_client: redis.Redis) -> Iterator[str]:
    """A fresh key prefix, removed after the test."""
    prefix = f"test:{uuid.uuid4().hex[:12]}"
    yield prefix
    keys = list(redis_client.scan_iter(f"{prefix}:*"))
    if keys:
        redis_client.delete(*keys)


#: Skips that are failures in CI, by the words their reason starts with, and the banner that
#: says so (``.ci/run`` refuses a run that printed one): the image tier without podman
#: (tests/image/conftest.py) and the chart's alert tests without promtool
#: (tests/integration/chart/test_alerts.py).
LOUD_SKIPS = {
    "THE IMAGE WAS NOT TESTED": ("THE IMAGE WAS NOT BUILT OR RUN", "tests/image skipped"),
    "PROMTOOL WAS NOT RUN": ("PROMTOOL WAS NOT RUN", "the chart's alert tests skipped"),
}


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    """The loud part: a skip of ``LOUD_SKIPS`` is not a pass. Read from the skip reports, which
    reach this process from pytest-xdist's workers too; here, not in the tiers' own conftests,
    which the xdist controller never loads (it collects nothing). Then what every test that
    neared its time limit was doing (tests/hangs.py)."""
    hangs.summarize(terminalreporter)
    reasons = {
        str(report.longrepr[2])
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple)
    }
    for words, (banner, what) in LOUD_SKIPS.items():
        for why in sorted(r for r in reasons if words in r):
            terminalreporter.write_sep("!", banner, red=True, bold=True)
            terminalreporter.write_line(f"{what}: {why}", red=True, bold=True)
