"""Redis failures as the rest of the product sees them.

Only ``shared.store`` may import redis (a layer contract), so a service that must answer
differently when Redis is down (the receiver's 503, R3) cannot catch redis-py's exceptions
itself. Store methods that a caller needs to tell "unreachable" from "broken" raise
``StoreUnavailable`` instead, classified once here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

#: What Redis being away looks like to a caller of redis-py (refused, timed out, dropped, still
#: loading its data after a restart): the exceptions a process catches to ride out an outage
#: (C9) without importing redis itself.
REDIS_DOWN: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)


class StoreUnavailable(Exception):
    """Redis did not answer (refused, timed out, or dropped the connection): try again later."""


@contextmanager
def unavailable_as_error(what: str) -> Iterator[None]:
    """Run Redis calls, re-raising connection failures as StoreUnavailable (``what`` names them)."""
    try:
        yield
    except REDIS_DOWN as err:
        raise StoreUnavailable(f"{what}: Redis unreachable: {type(err).__name__}") from err
