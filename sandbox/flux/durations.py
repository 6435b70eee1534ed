"""Go durations, as Flux objects spell them (``spec.interval: 10m``, ``timeout: 1m30s``).

Flux CRDs type ``interval``, ``retryInterval`` and ``timeout`` as Go ``metav1.Duration``
strings (CRD pattern ``^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$``), and the controllers print
durations with Go's ``time.Duration.String()`` in their messages ("... with a timeout of
9m30s"). The doubles need both directions, in seconds.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_WHOLE = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h))+$")


def parse(text: str) -> float:
    """Seconds in a Go duration string such as ``1h30m`` or ``500ms``; ValueError if malformed."""
    if not _WHOLE.match(text):
        raise ValueError(f"invalid duration {text!r}")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _PART.findall(text))


def format_go(seconds: float) -> str:
    """``seconds`` as Go's ``Duration.String()`` prints it: ``1h0m0s``, ``9m30s``, ``500ms``."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        return f"{_trim(seconds * 1000)}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{_trim(secs)}s"
    if hours or minutes:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return text


def _trim(value: float) -> str:
    """A number without a trailing ``.0``, as Go prints whole units."""
    return f"{value:.9f}".rstrip("0").rstrip(".")
