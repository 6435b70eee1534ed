"""What a ``GITOPS_REVERSER_REDIS_URL`` names: one server, or a Sentinel set's primary.

Pure parsing (no Redis), so ``shared.settings`` refuses a URL no process can connect with at
start-up, and ``shared.store.connection`` connects with what it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

#: The URL schemes of a Sentinel set (plain, TLS).
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
#: Every URL scheme the product accepts.
SCHEMES = ("redis", "rediss", "unix", *SENTINEL_SCHEMES)


class UrlError(ValueError):
    """A Redis URL the product cannot connect with."""


@dataclass(frozen=True, slots=True)
class SentinelUrl:
    """What a ``redis+sentinel://`` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None
    tls: bool = False


def parse_sentinel(url: str) -> SentinelUrl:
    """The parts of a ``redis+sentinel://`` or ``rediss+sentinel://`` URL; ``UrlError`` when
    it is not one or lacks a sentinel or the service name."""
    parts = urlsplit(url)
    if parts.scheme not in SENTINEL_SCHEMES:
        raise UrlError(f"is not a Sentinel URL (scheme {parts.scheme!r})")
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":") if userinfo else ("", "", "")
    sentinels = tuple(_host_port(item) for item in hostlist.split(",") if item)
    if not sentinels:
        raise UrlError("a Sentinel URL names at least one sentinel host:port")
    path = [unquote(p) for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise UrlError("a Sentinel URL's path is /<service> or /<service>/<db>")
    try:
        db = int(path[1]) if len(path) == 2 else 0
    except ValueError as err:
        raise UrlError(f"database {path[1]!r} is not a number") from err
    if db < 0:
        raise UrlError("the database number must not be negative")
    query = parse_qs(parts.query)
    unknown = sorted(set(query) - {"sentinel_password"})
    if unknown:
        raise UrlError(f"unknown Sentinel URL parameter(s): {', '.join(unknown)}")
    sentinel_password = query.get("sentinel_password", [None])[-1]
    return SentinelUrl(
        sentinels=sentinels,
        service=path[0],
        db=db,
        username=unquote(username) or None,
        password=unquote(password) or None,
        sentinel_password=sentinel_password or None,
        tls=parts.scheme == "rediss+sentinel",
    )


def _host_port(item: str) -> tuple[str, int]:
    host, sep, port = item.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UrlError(f"sentinel {item!r} is not host:port")
    return host.strip("[]"), int(port)


def check_url(url: str) -> None:
    """``UrlError`` unless the product can connect with ``url``."""
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        raise UrlError(
            "must be a redis://, rediss://, unix://, redis+sentinel:// or rediss+sentinel:// URL"
        )
    if scheme in SENTINEL_SCHEMES:
        parse_sentinel(url)
