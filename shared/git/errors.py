"""git failures, classified once at the adapter boundary.

``GitPermanent`` will not heal by retrying (bad credentials, no such repository);
``GitTemporary`` may (network, a remote that is restarting).

Every message is ``readable`` text: git's output is what the remote sent, and GitPython decodes
bytes that are not UTF-8 into lone surrogates, which Redis, Kubernetes and JSON refuse (N2: a
host answering garbage made the stall reason unwritable and stopped the branch worker). So
nothing git says leaves this package as anything but valid UTF-8 without control characters.
"""

from __future__ import annotations

import re

#: Control characters other than tab and newline (a remote's answer may hold any byte).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def readable(text: str) -> str:
    """``text`` as valid UTF-8: the bytes GitPython kept as surrogates (``surrogateescape``)
    decoded again with U+FFFD for what is not UTF-8 (any other lone surrogate becomes ``?``),
    and control characters other than tab and newline replaced by U+FFFD."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        raw = text.encode("utf-8", "replace")
    return _CONTROL.sub("\ufffd", raw.decode("utf-8", "replace"))


class GitError(Exception):
    """Base of every error the git adapter raises; its message is ``readable``."""

    def __init__(self, message: object = "") -> None:
        super().__init__(readable(str(message)))


class GitPermanent(GitError):
    """Retrying will not help: report it and stall."""


class GitTemporary(GitError):
    """Retrying later may help: back off and try again."""


class PathEscapes(GitPermanent):
    """A path that leaves the work tree (by its words or through a symbolic link): the write is
    refused, never retried."""


class WriteNotHeld(GitPermanent):
    """A commit that does not hold what was written for it (a write gone astray): nothing of
    it may be acknowledged."""
