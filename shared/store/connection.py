"""Connecting to Redis with timeouts that suit blocking reads.

redis-py 8 defaults to a 5 s socket timeout retried ten times, which turns a blocking stream
read of a few seconds into a minute-long hang (facts: webhooks-git-libs.md §3.4). Every
connection here sets a socket timeout above the longest block the code uses.
"""

from __future__ import annotations

import redis

#: The client type services may annotate with, without importing redis themselves.
Client = redis.Redis

#: The longest XREAD/BLPOP block any caller uses, in seconds.
MAX_BLOCK_S = 5.0
#: Socket timeout: comfortably above MAX_BLOCK_S so a block never looks like a dead socket.
SOCKET_TIMEOUT_S = MAX_BLOCK_S + 10.0


def connect(url: str, client_name: str = "gitops-reverser") -> redis.Redis:
    """A client for ``url`` that decodes responses to str."""
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=5.0,
        health_check_interval=30,
        client_name=client_name,
    )
