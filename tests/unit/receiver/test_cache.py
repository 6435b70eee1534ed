"""The short caches of receiver records and Secrets (R5; Settings.receiver_cache/secret_cache)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from services.receiver.cache import TtlCache
from shared.model.receivers import webhook_digest
from shared.settings import PREFIX, Settings, SettingsError, prometheus_multiproc_dir
from shared.store.receivers import ReceiverDirectory
from tests.unit.receiver import samples
from tests.unit.receiver.rig import Rig, answer


class Loader:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, key: str) -> str:
        self.calls += 1
        if key == "boom":
            raise ConnectionError("unreachable")
        return key.upper()


def test_a_value_is_kept_for_the_ttl_then_read_again() -> None:
    """R5: a short cache; the clock is injected (conventions.md 7), nothing sleeps."""
    now = [0.0]
    cache: TtlCache[str, str] = TtlCache(timedelta(seconds=5), lambda: now[0])
    load = Loader()
    assert cache.get("a", load) == "A" and cache.get("a", load) == "A"
    assert load.calls == 1
    now[0] = 5.0
    assert cache.get("a", load) == "A" and load.calls == 2


def test_failures_are_not_cached() -> None:
    """An unreachable Redis or API must be asked again next time (503, then recovery)."""
    cache: TtlCache[str, str] = TtlCache(timedelta(seconds=5), lambda: 0.0)
    load = Loader()
    for _ in range(2):
        with pytest.raises(ConnectionError):
            cache.get("boom", load)
    assert load.calls == 2


def test_an_expired_entry_is_reloaded_by_one_thread_while_the_others_keep_the_old_answer() -> None:
    """Under load an expiry sends one thread to Redis or the API server, not every thread.

    Thread A finds the entry expired and starts loading (held in ``load`` by an event); a
    read meanwhile gets the old answer without loading; once the entry is older than twice
    the ttl a read loads for itself even while A's load is still out (never older than that).
    """
    now = [0.0]
    cache: TtlCache[str, str] = TtlCache(timedelta(seconds=5), lambda: now[0])
    cache.get("a", lambda key: "old")
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow(key: str) -> str:
        calls.append("slow")
        started.set()
        assert release.wait(timeout=60), "the test never released the load"
        return "new"

    now[0] = 5.0
    reloading = threading.Thread(target=lambda: calls.append(cache.get("a", slow)), daemon=True)
    reloading.start()
    assert started.wait(timeout=60)

    def fresh(key: str) -> str:
        calls.append("fresh")
        return "fresh"

    assert cache.get("a", fresh) == "old"
    now[0] = 10.0
    assert cache.get("a", fresh) == "fresh"
    release.set()
    reloading.join(timeout=60)
    assert calls == ["slow", "fresh", "new"]


def test_two_loaders_of_one_key_keep_it_marked_until_both_are_done() -> None:
    """A second load (the entry past twice the ttl) ending first does not clear the mark of
    the first load still out: a third reader keeps the old answer instead of loading too; and
    the slow first load, read before the second, does not replace the second's fresher one."""
    now = [0.0]
    cache: TtlCache[str, str] = TtlCache(timedelta(seconds=5), lambda: now[0])
    cache.get("a", lambda key: "old")
    started, release = threading.Event(), threading.Event()

    def slow(key: str) -> str:
        started.set()
        assert release.wait(timeout=60), "the test never released the load"
        return "slow"

    now[0] = 5.0
    first = threading.Thread(target=lambda: cache.get("a", slow), daemon=True)
    first.start()
    assert started.wait(timeout=60)
    now[0] = 10.0
    assert cache.get("a", lambda key: "second") == "second"  # past twice the ttl: loads
    now[0] = 15.5
    assert cache.get("a", lambda key: "third") == "second"  # the first load is still out
    release.set()
    first.join(timeout=60)
    assert not first.is_alive()
    assert cache._entries["a"] == ("second", 10.0)  # the slow answer was older: not kept


def test_a_failed_reload_lets_the_next_reader_load_again() -> None:
    """A reload that failed leaves no mark: the next reader of the expired entry loads."""
    now = [0.0]
    cache: TtlCache[str, str] = TtlCache(timedelta(seconds=5), lambda: now[0])
    cache.get("boom", lambda key: "old")
    now[0] = 5.0
    load = Loader()
    with pytest.raises(ConnectionError):
        cache.get("boom", load)
    with pytest.raises(ConnectionError):
        cache.get("boom", load)
    assert load.calls == 2


def test_the_cache_is_bounded_and_zero_ttl_disables_it() -> None:
    """Keys come from requests (random paths), so the cache may not grow without bound."""
    bounded: TtlCache[str, str] = TtlCache(timedelta(seconds=5), lambda: 0.0, max_entries=3)
    load = Loader()
    for key in "abcdefgh":
        bounded.get(key, load)
    assert len(bounded._entries) <= 3
    off: TtlCache[str, str] = TtlCache(timedelta(0), lambda: 0.0)
    off.get("a", load)
    off.get("a", load)
    assert load.calls == 10


def test_a_removed_receiver_stops_answering_within_the_cache_time(rig: Rig) -> None:
    """Settings.receiver_cache: forgetting a receiver takes effect within that time."""
    path = rig.add("github")
    assert answer(rig.post(path, samples.github(samples.github_push(), delivery="1")))[0] == 202
    ReceiverDirectory(rig.redis, rig.keys).forget(path.rsplit("/", 1)[1])
    assert answer(rig.post(path, samples.github(samples.github_push(), delivery="2")))[0] == 202
    rig.now[0] += Settings().receiver_cache.total_seconds()
    assert answer(rig.post(path, samples.github(samples.github_push(), delivery="3"))) == (
        404,
        "not_found",
    )


def test_a_new_receiver_answers_within_the_cache_time(rig: Rig) -> None:
    """A path probed before its receiver was published is found once the cache expires."""
    path = "/hook/" + webhook_digest(samples.SECRET, "gp", "team")
    assert answer(rig.post(path, samples.github(samples.github_push())))[0] == 404
    rig.add("github")
    assert answer(rig.post(path, samples.github(samples.github_push())))[0] == 404
    rig.now[0] += Settings().receiver_cache.total_seconds()
    assert answer(rig.post(path, samples.github(samples.github_push()))) == (202, "stored")


@pytest.mark.parametrize("bind", ["8080", "host:", ":80", "h:99999", "h:x"])
def test_a_bad_bind_stops_the_process(bind: str) -> None:
    """conventions.md 6: invalid settings fail at start-up, naming the variable."""
    with pytest.raises(SettingsError, match="RECEIVER_BIND"):
        Settings.from_env({PREFIX + "RECEIVER_BIND": bind})


def test_receiver_settings_from_the_environment() -> None:
    """Defaults as documented; PROMETHEUS_MULTIPROC_DIR is read (facts §3.5), not required."""
    settings = Settings.from_env(
        {PREFIX + "RECEIVER_BIND": "127.0.0.1:0", PREFIX + "RECEIVER_CACHE": "0s"}
    )
    assert settings.receiver_bind == "127.0.0.1:0" and settings.receiver_cache == timedelta(0)
    assert Settings().receiver_bind == "0.0.0.0:8080"
    assert prometheus_multiproc_dir({}) is None
    assert str(prometheus_multiproc_dir({"PROMETHEUS_MULTIPROC_DIR": "/tmp/p"})) == "/tmp/p"
