"""Redis URLs: one server, or a Sentinel set (``shared.model.redis_url``), and the clients
``shared.store.connection`` makes of them (no server needed: redis-py connects on first use)."""

from __future__ import annotations

from unittest.mock import patch

import fakeredis
import pytest
import redis
from redis.connection import Connection, SSLConnection
from redis.sentinel import SentinelConnectionPool

from shared.model.redis_url import SentinelUrl, UrlError, check_url, parse_sentinel
from shared.store.connection import MadeClient, connect, open_client
from shared.store.durable import acknowledged, min_replicas


def test_a_sentinel_url_names_the_sentinels_service_db_and_password() -> None:
    url = "redis+sentinel://:s%40cret@10.0.0.1:26379,[::1]:26380/gr-primary/3"
    assert parse_sentinel(url) == SentinelUrl(
        sentinels=(("10.0.0.1", 26379), ("::1", 26380)),
        service="gr-primary",
        db=3,
        password="s@cret",
    )


def test_tls_a_user_the_default_db_and_a_sentinel_password() -> None:
    url = "rediss+sentinel://app:pw@s1:26379/main?sentinel_password=sp"
    spec = parse_sentinel(url)
    assert (spec.tls, spec.username, spec.password, spec.db) == (True, "app", "pw", 0)
    assert spec.sentinel_password == "sp"


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("redis+sentinel://s1:26379", "path"),
        ("redis+sentinel://s1:26379/a/b/c", "path"),
        ("redis+sentinel://s1/main", "host:port"),
        ("redis+sentinel://s1:99999/main", "host:port"),
        ("redis+sentinel://s1:26379/main/x", "not a number"),
        ("redis+sentinel://s1:26379/main?color=red", "unknown"),
        ("memcached://s1:11211", "must be a redis://"),
    ],
)
def test_urls_no_process_can_connect_with_are_refused(url: str, fragment: str) -> None:
    with pytest.raises(UrlError, match=fragment):
        check_url(url)


def test_a_sentinel_client_finds_its_primary_through_the_pool() -> None:
    client = connect("redis+sentinel://:pw@127.0.0.1:1,127.0.0.1:2/gr/4", min_replicas=1)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "gr"
    assert pool.connection_kwargs["db"] == 4
    assert pool.connection_kwargs["password"] == "pw"
    assert [
        s.connection_pool.connection_kwargs["port"] for s in pool.sentinel_manager.sentinels
    ] == [1, 2]
    assert min_replicas(client) == 1
    twin = client.twin(decode_responses=False)
    assert isinstance(twin, MadeClient) and isinstance(twin.connection_pool, SentinelConnectionPool)
    assert twin.connection_pool.connection_kwargs["decode_responses"] is False
    assert min_replicas(twin) == 1


def _disconnect_on_error_of(url: str, tls: bool) -> list[bool]:
    """What a Sentinel primary connection of ``url`` asks of redis-py's read when the read
    is interrupted."""
    connection = connect(url).connection_pool.make_connection()
    assert isinstance(connection, SSLConnection) is tls
    calls: list[bool] = []

    def interrupted(*args: object, disconnect_on_error: bool = False, **kwargs: object) -> None:
        calls.append(disconnect_on_error)
        raise KeyboardInterrupt

    with patch.object(Connection, "read_response", interrupted), pytest.raises(KeyboardInterrupt):
        connection.read_response()
    return calls


def test_a_sentinel_connection_is_dropped_when_a_read_is_cut_short() -> None:
    """redis-py 8.1's Sentinel connection keeps its socket after an exception inside a read;
    ours drops it, as every other redis-py connection does (a reply left owed on the socket
    is read as the next command's: an rq worker's warm shutdown hung on it)."""
    assert _disconnect_on_error_of("redis+sentinel://127.0.0.1:1/gr", tls=False) == [True]
    assert _disconnect_on_error_of("rediss+sentinel://127.0.0.1:1/gr", tls=True) == [True]


def test_a_plain_url_keeps_its_options_in_a_twin() -> None:
    client = open_client("redis://127.0.0.1:1/2", decode_responses=True, client_name="x")
    twin = client.twin(decode_responses=False)
    kwargs = twin.connection_pool.connection_kwargs
    assert (kwargs["db"], kwargs["client_name"], kwargs["decode_responses"]) == (2, "x", False)


def test_zero_replicas_acknowledges_on_the_client_itself() -> None:
    fake = fakeredis.FakeRedis(decode_responses=True)
    with acknowledged(fake) as client:
        assert client is fake
        client.set("k", "v")
    assert fake.get("k") == "v"


def test_replicas_asked_for_pin_the_block_and_send_wait_after_it() -> None:
    """With replicas asked for, the block's commands and pipelines run on a pinned client,
    then WAIT goes on the same connection; fakeredis has no WAIT (it answers unknown command,
    which shows it was sent), so the wait itself is the integration tier's
    (tests/integration/store/test_min_replicas.py)."""
    fake = fakeredis.FakeRedis(decode_responses=True)
    with (
        pytest.raises(redis.ResponseError, match=r"unknown command 'wait'"),
        acknowledged(fake, replicas=1) as pinned,
    ):
        assert pinned is not fake
        pinned.set("a", "1")
        pipe = pinned.pipeline()
        pipe.incr("b")
        pipe.execute()
    assert (fake.get("a"), fake.get("b")) == ("1", "1")
