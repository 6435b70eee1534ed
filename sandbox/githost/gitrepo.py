"""Plumbing over a bare repository on disk: create it, read its refs, describe its commits.

The git host never keeps its own idea of what a repository holds: everything a webhook says
(refs, commit lists, file changes, whether an update was forced) is read back from the real
repository with the git CLI, so the payloads describe exactly what a client pushed.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ZERO_SHA = "0" * 40
SANDBOX_IDENTITY = ("Sandbox", "sandbox@sandbox.invalid")
FIELD = "\x1f"
RECORD = "\x1e"
# %B is last but one: a message may hold anything except these two control characters.
LOG_FORMAT = "%x1e%H%x1f%T%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B%x1f"

Refs = dict[str, str]


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    email: str


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit as every provider's payload needs it."""

    id: str
    tree_id: str
    message: str
    timestamp: str  # ISO 8601 with offset, as the hosts send it
    author: Person
    committer: Person
    added: tuple[str, ...]
    removed: tuple[str, ...]
    modified: tuple[str, ...]


class GitError(RuntimeError):
    """A git command failed; the message carries its stderr."""


def git(repo: Path, *args: str, stdin: bytes = b"", env: Mapping[str, str] | None = None) -> str:
    """Run ``git -C repo args`` and return its stdout; raise GitError on a non-zero exit."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, **env} if env else None,
        check=False,
    )
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode()


def init_bare(path: Path, default_branch: str) -> None:
    """Create an empty bare repository whose HEAD names ``default_branch``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    git(path.parent, "init", "--quiet", "--bare", f"--initial-branch={default_branch}", path.name)


def write_initial_commit(path: Path, branch: str, files: Mapping[str, bytes], when: float) -> str:
    """Commit ``files`` onto ``branch`` without a worktree (blobs, a scratch index, commit-tree)."""
    lines = []
    for name, content in sorted(files.items()):
        blob = git(path, "hash-object", "-w", "--stdin", stdin=content).strip()
        lines.append(f"100644 blob {blob}\t{name}\n")
    with tempfile.TemporaryDirectory() as scratch:
        index_env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(path, "update-index", "--index-info", stdin="".join(lines).encode(), env=index_env)
        tree = git(path, "write-tree", env=index_env).strip()
    name, email = SANDBOX_IDENTITY
    stamp = f"@{int(when)} +0000"
    ident = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": stamp,
    }
    commit = git(path, "commit-tree", tree, "-m", "Initial commit", env=ident).strip()
    git(path, "update-ref", f"refs/heads/{branch}", commit, ZERO_SHA)
    return commit


def read_refs(path: Path) -> Refs:
    """Every ref of the repository and the object it points at (tags unpeeled)."""
    out = git(path, "for-each-ref", "--format=%(objectname) %(refname)")
    return {ref: sha for sha, ref in (line.split(" ", 1) for line in out.splitlines())}


def peel(path: Path, sha: str) -> str:
    """The commit an object (an annotated tag, say) finally points at."""
    return git(path, "rev-parse", f"{sha}^{{commit}}").strip()


def is_ancestor(path: Path, older: str, newer: str) -> bool:
    """True when ``older`` is reachable from ``newer`` (the update is a fast-forward)."""
    proc = subprocess.run(
        ["git", "-C", str(path), "merge-base", "--is-ancestor", older, newer],
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


def log(path: Path, include: str, exclude: Sequence[str] = (), limit: int = 0) -> list[CommitInfo]:
    """Commits reachable from ``include`` but from none of ``exclude``, newest first."""
    args = ["log", "-z", "--no-renames", "--diff-merges=first-parent", "--name-status"]
    if limit:
        args.append(f"--max-count={limit}")
    args += [f"--format={LOG_FORMAT}", include]
    if exclude:
        args += ["--not", *exclude]
    out = git(path, *args, "--")
    return [_parse_commit(chunk) for chunk in out.split(RECORD) if chunk.strip("\0\n")]


def count(path: Path, include: str, exclude: Sequence[str] = ()) -> int:
    """How many commits ``log`` would list without a limit."""
    args = ["rev-list", "--count", include]
    if exclude:
        args += ["--not", *exclude]
    return int(git(path, *args, "--").strip())


def _parse_commit(chunk: str) -> CommitInfo:
    fields = chunk.split(FIELD)
    sha, tree, an, ae, adate, cn, ce, _cdate, message = fields[:9]
    changes: dict[str, list[str]] = {"A": [], "D": [], "M": []}
    tokens = [t for t in fields[9].strip("\0\n").split("\0") if t] if len(fields) > 9 else []
    for status, name in zip(tokens[0::2], tokens[1::2], strict=False):
        changes.setdefault(status.strip()[:1], []).append(name)
    return CommitInfo(
        id=sha,
        tree_id=tree,
        message=message.rstrip("\n"),
        timestamp=adate,
        author=Person(an, ae),
        committer=Person(cn, ce),
        added=tuple(changes["A"]),
        removed=tuple(changes["D"]),
        modified=tuple(changes["M"]),
    )
