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


class StoreUnavailable(Exception):
    """Redis did not answer (refused, timed out, or dropped the connection): try again later."""


@contextmanager
def unavailable_as_error(what: str) -> Iterator[None]:
    """Run Redis calls, re-raising connection failures as StoreUnavailable (``what`` names them)."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as err:
        raise StoreUnavailable(f"{what}: Redis unreachable: {type(err).__name__}") from err
