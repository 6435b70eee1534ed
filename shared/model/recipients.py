"""Age recipients, as ``spec.encryption`` names them (P3): checked, without the SOPS encoder.

Kept apart from ``shared.model.sops`` so the CRD parsers (which the pure rules import) check a
GitTarget's recipients without importing the writer's YAML machinery.
"""

from __future__ import annotations

import pyrage


class SopsError(ValueError):
    """A document or recipient that cannot be sealed (a permanent, user-visible problem)."""


def parse_recipients(values: list[str] | tuple[str, ...] | str) -> tuple[str, ...]:
    """Age recipients from a list, or from a recipients file's text (one a line, ``#``
    comments), checked and sorted; raises SopsError naming the first bad one."""
    lines = values.splitlines() if isinstance(values, str) else list(values)
    found: list[str] = []
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            pyrage.x25519.Recipient.from_str(text)
        except Exception as err:  # pyrage raises its own RecipientError, or ValueError
            raise SopsError(f"{text[:20]!r} is not an age recipient (age1...)") from err
        found.append(text)
    if not found:
        raise SopsError("no age recipient given")
    return tuple(sorted(set(found)))
