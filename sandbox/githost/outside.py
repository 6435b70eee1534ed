"""Someone else's git: clone a sandbox repository, change files, commit as them, push.

The product must tell its own commits from everyone else's (Q5-Q7: foreign commits, outside
pushes), so the tests, the demo and the benchmarks all need "another person with a clone".
This is that person, once: a real ``git`` under a fixed identity and with no configuration of
the machine's (no system or global config), so a developer's ``~/.gitconfig`` never changes
what a test sees.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Long enough for a clone or a push on a loaded machine; bounds a hung git.
GIT_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the commits are by (author and committer alike)."""

    name: str
    email: str


SOMEONE_ELSE = Identity("Someone Else", "se@example.com")


def environment(identity: Identity = SOMEONE_ELSE) -> dict[str, str]:
    """git's environment for an outside person: their name and nobody's configuration."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }


def git(
    *args: str,
    cwd: Path | None = None,
    identity: Identity = SOMEONE_ELSE,
    timeout: float = GIT_TIMEOUT_S,
) -> str:
    """Run one git command as the outside person; its output, stripped."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=environment(identity),
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    return done.stdout.strip()


class OutsideClone:
    """A clone someone else works in: write files, commit, push, as often as they like."""

    def __init__(
        self,
        url: str,
        work: Path,
        identity: Identity = SOMEONE_ELSE,
        timeout: float = GIT_TIMEOUT_S,
    ) -> None:
        self.work = work
        self._identity = identity
        self._timeout = timeout
        work.parent.mkdir(parents=True, exist_ok=True)
        self.git("clone", "-q", url, str(work), cwd=work.parent)

    def git(self, *args: str, cwd: Path | None = None) -> str:
        """One git command in the clone (or in ``cwd``), as this person."""
        return git(*args, cwd=cwd or self.work, identity=self._identity, timeout=self._timeout)

    def write(self, files: Mapping[str, str | bytes]) -> None:
        """Write each file (path relative to the clone), creating folders as needed."""
        for name, content in files.items():
            path = self.work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)

    def commit(self, message: str) -> str:
        """Commit every change in the clone; the new commit."""
        self.git("add", "-A")
        self.git("commit", "-qm", message)
        return self.git("rev-parse", "HEAD")

    def push(self, branch: str = "main") -> None:
        """Push the clone's HEAD to ``branch``."""
        self.git("push", "-q", "origin", f"HEAD:{branch}")

    def sync(self, branch: str = "main") -> None:
        """Catch up with the remote ``branch`` (others pushed since the clone), dropping nothing
        of ours that was pushed."""
        self.git("fetch", "-q", "origin")
        self.git("reset", "-q", "--hard", f"origin/{branch}")


def push(
    url: str,
    work: Path,
    files: Mapping[str, str | bytes],
    message: str = "outside change",
    *,
    branch: str = "main",
    identity: Identity = SOMEONE_ELSE,
) -> str:
    """Someone else clones ``url`` into ``work``, commits ``files`` and pushes; the commit."""
    clone = OutsideClone(url, work, identity)
    clone.write(files)
    commit = clone.commit(message)
    clone.push(branch)
    return commit
