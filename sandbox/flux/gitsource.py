"""The source-controller double's Git side: resolve a GitRepository ref, fetch, archive.

Real ``git`` over HTTP only: ``ls-remote`` reads the remote ref (exact match on the full ref
name, tags peeled), ``fetch`` brings that one commit into a bare cache repository per
GitRepository under the work directory, and ``archive`` writes the commit's tree as the
tarball artifact. Ref precedence and revision strings follow
../shared/facts/appliers.md F2 (source-controller ``api/v1/gitrepository_types.go`` and
``commitReference`` / fluxcd/pkg ``git/git.go``):

- precedence, lowest first: ``branch`` < ``tag`` < ``semver`` < ``name`` < ``commit``; no ref at
  all means branch ``master``;
- revision ``<branch or tag>@sha1:<hex>``; with ``name``, ``<full ref>@sha1:<hex>``; with only
  ``commit``, ``sha1:<hex>``; ``branch`` + ``commit``, ``<branch>@sha1:<hex>`` (the commit must
  be on that branch).

Not supported (a FetchFailed error says so): ``semver`` ranges, SHA-256 repositories,
credentials (``secretRef``), includes and submodules.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_BRANCH = "master"  # source-controller's default when spec.ref is absent

#: File names source-controller excludes from artifacts anywhere in the tree (``ExcludeExtra``).
EXCLUDED_NAMES = (".goreleaser.yml", ".sops.yaml", ".flux.yaml")


class GitFailure(Exception):
    """A git operation failed; the message is what the FetchFailed condition shows."""


@dataclass(frozen=True, slots=True)
class GitRef:
    """``spec.ref`` of a GitRepository."""

    branch: str = ""
    tag: str = ""
    semver: str = ""
    name: str = ""
    commit: str = ""

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> GitRef:
        """The ref of a GitRepository spec (branch ``master`` when there is none)."""
        ref = spec.get("ref") or {"branch": DEFAULT_BRANCH}
        return cls(
            *(str(ref.get(field) or "") for field in ("branch", "tag", "semver", "name", "commit"))
        )

    def describe(self) -> str:
        """The ref as the controller names it in messages."""
        return self.commit or self.name or self.semver or self.tag or self.branch


@dataclass(frozen=True, slots=True)
class Resolved:
    """The commit a ref points at now, and the artifact revision string for it."""

    sha: str
    revision: str


class GitCache:
    """Bare cache repositories, one per GitRepository, under ``root``."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._home = root / "home"
        self._home.mkdir(parents=True, exist_ok=True)

    def resolve(self, url: str, ref: GitRef, timeout: float) -> Resolved:
        """Ask the remote where ``ref`` points now, without fetching anything."""
        if ref.commit:
            return Resolved(ref.commit, _revision(ref.branch, ref.commit))
        if ref.name:
            sha = self.remote_sha(url, ref.name, timeout)
            return Resolved(sha, _revision(ref.name, sha))
        if ref.semver:
            raise GitFailure(f"semver ref '{ref.semver}' is not supported by the sandbox double")
        full, short = (
            (f"refs/tags/{ref.tag}", ref.tag)
            if ref.tag
            else (f"refs/heads/{ref.branch}", ref.branch)
        )
        sha = self.remote_sha(url, full, timeout)
        return Resolved(sha, _revision(short, sha))

    def fetch(self, cache: str, url: str, ref: GitRef, sha: str, timeout: float) -> Path:
        """Fetch ``sha`` (checking it is on ``ref.branch`` when both are set); the cache path."""
        repo = self._cache(cache)
        if ref.commit and ref.branch:
            tip = self.remote_sha(url, f"refs/heads/{ref.branch}", timeout)
            self._git(repo, timeout, "fetch", "--no-tags", "--quiet", url, tip)
            if self._git_status(repo, timeout, "merge-base", "--is-ancestor", sha, tip) != 0:
                raise GitFailure(
                    f"unable to resolve commit object for '{sha}': not on branch '{ref.branch}'"
                )
            return repo
        self._git(repo, timeout, "fetch", "--no-tags", "--quiet", url, sha)
        return repo

    def archive(self, repo: Path, sha: str, dest: Path, timeout: float) -> None:
        """Write the tree of ``sha`` as a gzipped tarball at ``dest``, without the files
        source-controller leaves out of every artifact by default that matter to the product
        (fluxcd/pkg ``sourceignore`` ``ExcludeExtra``: ``**/.goreleaser.yml``,
        ``**/.sops.yaml``, ``**/.flux.yaml``; a folder's SOPS creation rule never reaches the
        build). Its other defaults (VCS, CI and image files) are not modelled."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        excluded = [f":(exclude,glob)**/{name}" for name in EXCLUDED_NAMES]
        self._git(
            repo, timeout, "archive", "--format=tar.gz", "-o", str(dest), sha, "--", ".", *excluded
        )

    def remote_sha(self, url: str, full_ref: str, timeout: float) -> str:
        """The commit ``full_ref`` (an annotated tag peeled) points at on the remote now."""
        peeled = f"{full_ref}^{{}}"  # an annotated tag's commit; git lists it only when asked
        out = self._git(self._root, timeout, "ls-remote", url, full_ref, peeled)
        refs = {ref: sha for sha, ref in (line.split("\t", 1) for line in out.splitlines())}
        sha = refs.get(peeled) or refs.get(full_ref)
        if sha is None:
            raise GitFailure(f"unable to clone '{url}': couldn't find remote ref \"{full_ref}\"")
        return sha

    def _cache(self, name: str) -> Path:
        repo = self._root / "repos" / f"{name}.git"
        if not (repo / "HEAD").exists():
            repo.parent.mkdir(parents=True, exist_ok=True)
            self._git(repo.parent, 60, "init", "--quiet", "--bare", repo.name)
        return repo

    def _run(self, cwd: Path, timeout: float, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self._home),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LANG": "C",
        }
        try:
            return subprocess.run(
                ["git", "-C", str(cwd), *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise GitFailure(f"git {args[0]} timed out after {timeout:g}s") from err

    def _git(self, cwd: Path, timeout: float, *args: str) -> str:
        proc = self._run(cwd, timeout, *args)
        if proc.returncode != 0:
            raise GitFailure(f"git {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def _git_status(self, cwd: Path, timeout: float, *args: str) -> int:
        return self._run(cwd, timeout, *args).returncode


def _revision(ref: str, sha: str) -> str:
    """F2 revision string: ``<ref>@sha1:<hex>``, or ``sha1:<hex>`` without a ref."""
    return f"{ref}@sha1:{sha}" if ref else f"sha1:{sha}"
