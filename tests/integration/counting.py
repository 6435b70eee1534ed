"""A Redis client like the product's whose connections count every command they send, for the
tests that hold a pass to a number of round trips (idle costs, issue 29)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import redis


def counting_client(url: str, counts: Counter[str]) -> redis.Redis:
    """A client on ``url`` that adds each command it sends to ``counts`` (by name, upper case),
    a pipeline's one by one."""

    class Counting(redis.Connection):
        def send_command(self, *args: Any, **kwargs: Any) -> None:
            counts[str(args[0]).upper()] += 1
            super().send_command(*args, **kwargs)

        def pack_commands(self, commands: Any) -> Any:  # a pipeline's commands
            for command in commands:
                counts[str(command[0]).upper()] += 1
            return super().pack_commands(commands)

    return redis.Redis.from_url(url, decode_responses=True, connection_class=Counting)
