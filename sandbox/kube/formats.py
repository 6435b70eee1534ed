"""The string formats the API server checks in a custom resource.

kube-apiserver strips every format outside its supported list before validating
(apiextensions-apiserver ``pkg/apiserver/validation/formats.go``), so ``int32``, ``int64`` and
the like never refuse anything, and checks the supported ones with kube-openapi's ``strfmt``
registry. The formats real CRDs use are checked here the same way; the rest of the supported
list (uri, email, hostname, isbn, creditcard, ssn, rgbcolor, bsonobjectid, duration) is accepted
unchecked: a known gap, harmless for the CRDs the sandbox serves.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date
from types import MappingProxyType

_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_FULL_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_UUID = MappingProxyType(
    {
        "uuid": r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        "uuid3": r"^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        "uuid4": r"^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        "uuid5": r"^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    }
)
_HEX_COLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_MAC = re.compile(
    r"^([0-9a-fA-F]{2}([:-]))([0-9a-fA-F]{2}\2){4}[0-9a-fA-F]{2}$"
    r"|^([0-9a-fA-F]{2}([:-]))([0-9a-fA-F]{2}\5){6}[0-9a-fA-F]{2}$"
    r"|^([0-9a-fA-F]{4}\.){2}[0-9a-fA-F]{4}$"
)


def is_date(text: str) -> bool:
    """RFC 3339 full-date, a real calendar day."""
    match = _FULL_DATE.match(text)
    if not match:
        return False
    try:
        date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return False
    return True


def is_date_time(text: str) -> bool:
    """strfmt.IsDateTime: a full-date, a 'T', then hh:mm:ss[.frac] and Z or an offset."""
    parts = text.lower().split("t")
    if len(text) < 4 or len(parts) < 2 or not is_date(parts[0]):
        return False
    match = _TIME.match(parts[1])
    if match is None:
        return False
    return match[1] <= "23" and match[2] <= "59" and match[3] <= "59"


def _is_byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _is_ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


def _is_cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _uuid(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern, re.IGNORECASE)
    return lambda text: compiled.match(text) is not None


_CHECKS: MappingProxyType[str, Callable[[str], bool]] = MappingProxyType(
    {
        "date": is_date,
        "datetime": is_date_time,
        "byte": _is_byte,
        "ipv4": lambda text: _is_ip(text, 4),
        "ipv6": lambda text: _is_ip(text, 6),
        "cidr": _is_cidr,
        "mac": lambda text: _MAC.match(text) is not None,
        "hexcolor": lambda text: _HEX_COLOR.match(text) is not None,
        **{name: _uuid(pattern) for name, pattern in _UUID.items()},
    }
)


def _normalized(name: str) -> str:
    """strfmt registry names ignore case, dashes and underscores ('date-time' is 'datetime')."""
    return name.lower().replace("-", "").replace("_", "")


def format_holds(name: str, text: str) -> bool:
    """Whether ``text`` satisfies format ``name``; unsupported or unchecked formats always hold."""
    check = _CHECKS.get(_normalized(name))
    return check is None or check(text)
