"""A working copy of one branch: fetch, reset, write files, commit, compare-and-swap push.

Pushes are never forced (M7): ``--force-with-lease=<ref>:<expected>`` makes the push a
compare-and-swap against the tip we built on, and the result is read from ``--porcelain``
output, because GitPython cannot report the outcome of a push whose source is a raw sha.

Every write is checked, not assumed (M8): a commit records what each written path should hold
(its blob's sha), and after the commit one ``git ls-tree`` of the written paths must show
exactly that (or the path absent, for a delete). A write that went astray (through a symbolic
link, say) raises ``WriteNotHeld`` and nothing of it is acknowledged. The files themselves,
the paths' safety and the record of writes since the last commit are ``files.py``'s
(``WorkFiles``); this class runs git.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import git
from git.refs.symbolic import SymbolicReference

from shared.git.errors import GitTemporary, WriteNotHeld, readable
from shared.git.files import FolderScan, WorkFiles
from shared.git.files import key as _key
from shared.git.remote import NETWORK_TIMEOUT_S, NO_PROMPT, branch_ref
from shared.git.signing import signing_options

#: git's status flags in ``push --porcelain`` output that mean the ref moved as asked.
_PUSHED_FLAGS = {" ", "*", "="}
#: From this many files written since the last commit, ``git add`` writes their blobs into one
#: pack instead of one loose object file each (a snapshot of 11,000 objects: half the time,
#: and no ``gc --auto`` repacking them behind the push). Below it, loose objects as usual, so
#: single edits do not pile up one small pack each.
BULK_ADD_FILES = 200
#: Up to this many written paths are named to ``ls-tree`` one by one; more, and the committed
#: folders are listed whole (one process either way).
CHECK_BY_NAME = 100
#: ``git commit`` and ``git fetch`` start ``git maintenance run --auto`` after each run, a
#: process per commit that nearly always finds nothing to do (its threshold is thousands of
#: loose objects): a tenth of an edit's local git time. The work tree turns that off
#: (``maintenance.auto``) and runs the same ``--auto`` check itself every this many commits,
#: so loose objects are still packed in time.
MAINTAIN_EVERY = 100


@dataclass(frozen=True, slots=True)
class Committer:
    """Who commits: the GitProvider's ``spec.commit.committer``, its CRD defaults applied
    (``shared.model.defaults``) before it gets here, so none are restated."""

    name: str
    email: str


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit as a person reads it: sha, author, commit time (epoch seconds), subject."""

    sha: str
    author_name: str
    author_email: str
    committed_at: float
    subject: str


@dataclass(frozen=True, slots=True)
class PushResult:
    """What git said about one CAS push."""

    pushed: bool
    summary: str  # git's own words, e.g. "[rejected] (stale info)"


class Workspace:
    """A clone of ``url`` kept in ``directory``, working on one ``branch``."""

    def __init__(
        self,
        directory: Path,
        url: str,
        branch: str,
        env: Mapping[str, str] | None = None,
        timeout: float = NETWORK_TIMEOUT_S,
    ) -> None:
        self.directory = directory
        #: Deadline of one fetch or push: git is killed after it (C3).
        self.timeout = timeout
        self.url = url
        self.branch = branch
        self.ref = branch_ref(branch)
        self._env = {**NO_PROMPT, **(env or {})}
        self._repo = self._open()
        self._commits = 0
        #: The work tree's files, and the writes since the last commit (see ``_check_held``).
        self.work_files = WorkFiles(directory)

    def _open(self) -> git.Repo:
        if (self.directory / ".git").is_dir():
            repo = git.Repo(self.directory)
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            repo = git.Repo.init(self.directory)
            repo.create_remote("origin", self.url)
        with repo.config_writer() as config:  # in Python: no process
            config.set_value("maintenance", "auto", "false")
        repo.git.update_environment(**self._env)
        return repo

    def fetch(self) -> str | None:
        """Fetch the branch; returns the remote tip, or None when the branch does not exist."""
        remote_ref = f"refs/remotes/origin/{self.branch}"
        try:
            self._repo.git.fetch(
                "--prune", "origin", f"+{self.ref}:{remote_ref}", kill_after_timeout=self.timeout
            )
        except git.GitCommandError as err:
            if "couldn't find remote ref" in str(err.stderr):
                return None
            raise GitTemporary(f"fetch of {self.url} failed: {err.stderr}") from err
        return str(self._repo.git.rev_parse(remote_ref))

    def reset(self, tip: str | None) -> None:
        """Make the work tree exactly ``tip`` (or an empty tree when the branch is new); a git
        failure is a ``GitTemporary`` (the pass gives the branch back), never a raw error that
        would stop the process."""
        try:
            self._reset(tip)
        except git.GitCommandError as err:
            raise GitTemporary(f"reset to {tip or 'an empty tree'} failed: {err.stderr}") from err

    def _reset(self, tip: str | None) -> None:
        self.work_files.rewritten()
        if tip is None:
            self._unborn()
            self._repo.git.rm("-r", "-q", "--cached", "--ignore-unmatch", ".")
            self._clean_tree()
            return
        self._repo.git.checkout("-q", "-B", f"gr-{self.branch}", tip)
        self._repo.git.reset("-q", "--hard", tip)
        self._repo.git.clean("-q", "-f", "-d", "-x")

    def _unborn(self) -> None:
        """HEAD on a local branch with no commits, as ``checkout --orphan`` makes one, even
        when a commit made on it earlier never reached the remote (a refused first push to an
        empty remote, then a replay, or a restart over this work tree): that commit is
        dropped, as a reset to a tip drops one; ``checkout --orphan`` refused the existing
        branch."""
        local = f"refs/heads/gr-{self.branch}"
        self._repo.git.symbolic_ref("HEAD", local)
        self._repo.git.update_ref("-d", local)

    def _clean_tree(self) -> None:
        for child in self.directory.iterdir():
            if child.name == ".git":
                continue
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()

    def read(self, path: str) -> bytes | None:
        """A file's bytes in the work tree, or None."""
        return self.work_files.read(path)

    def write(self, path: str, data: bytes) -> None:
        """Write a file (creating folders)."""
        self.work_files.write(path, data)

    def write_if_changed(self, path: str, data: bytes) -> bool:
        """``write``, unless the file holds ``data`` already (False then)."""
        return self.work_files.write_if_changed(path, data)

    def delete(self, path: str) -> None:
        """Remove a file if present."""
        self.work_files.delete(path)

    def files(self, folder: str) -> list[str]:
        """Repo-relative paths of the files under ``folder``."""
        return self.work_files.scan(folder).files

    def scan(self, folder: str) -> FolderScan:
        """The files and symbolic links under ``folder`` (links are listed, never followed)."""
        return self.work_files.scan(folder)

    def leads_elsewhere(self, folder: str) -> bool:
        """Whether ``folder`` (or a folder above it) is a symbolic link (``WorkFiles``)."""
        return self.work_files.leads_elsewhere(folder)

    def commit(
        self,
        message: str,
        committer: Committer,
        paths: tuple[str, ...] = (),
        signing_key: Path | None = None,
        author: Committer | None = None,
    ) -> str | None:
        """Commit the changes under ``paths`` (default: everything); None when none changed.
        ``author`` is the commit's author when it is not the committer (attribution).

        Two git processes, as a person typing it: ``add`` and ``commit``. Whether anything was
        staged is asked of git only when the commit fails (``git commit`` exits 1 when there is
        nothing to commit), and the new commit's sha is read from its ref, not from a process.
        With ``signing_key`` (a private key file, ``shared.git.signing.key_file``) the commit is
        signed as ``git -c gpg.format=ssh -c user.signingkey=<key> commit -S`` signs it.
        """
        # core.bigFileThreshold=1 makes every blob "big": git streams them into one pack
        bulk = self.work_files.written >= BULK_ADD_FILES
        options = {"c": "core.bigFileThreshold=1"} if bulk else {}
        try:
            self._repo.git(**options).add("-A", "--", *(paths or (".",)))
        except git.GitCommandError as failed:  # a file git will not add: the branch retries
            raise GitTemporary(f"add failed: {failed.stderr}") from failed
        self.work_files.written = 0
        writer = author or committer
        who = {
            "GIT_AUTHOR_NAME": writer.name,
            "GIT_AUTHOR_EMAIL": writer.email,
            "GIT_COMMITTER_NAME": committer.name,
            "GIT_COMMITTER_EMAIL": committer.email,
        }
        run = self._repo.git(c=signing_options(signing_key)) if signing_key else self._repo.git
        status, out, err = run.commit(
            "-q",
            "--no-verify",
            "-m",
            message,
            env=who,
            with_extended_output=True,
            with_exceptions=False,
        )
        if status != 0:
            if not self._nothing_staged():
                raise GitTemporary(f"commit failed: {err.strip() or out.strip()}")
            self._check_held(paths)
            return None
        self._check_held(paths)
        self._maintain()
        return self.head()

    def _maintain(self) -> None:
        """Every ``MAINTAIN_EVERY`` commits, what ``git commit`` would run after each."""
        self._commits += 1
        if self._commits % MAINTAIN_EVERY == 0:
            self._repo.git.maintenance("run", "--auto", "--quiet", with_exceptions=False)

    def discard(self, folder: str) -> None:
        """Drop every change under ``folder`` since the last commit (a window that may not be
        committed): the work tree and index there become HEAD's again, untracked files go."""
        self._repo.git.reset("-q", "--", _key(folder) or ".", with_exceptions=False)
        if _tree(self._repo, [_key(folder)]):
            self._repo.git.checkout("-q", "HEAD", "--", _key(folder) or ".")
        else:
            self._repo.git.rm("-r", "-q", "--cached", "--ignore-unmatch", "--", _key(folder) or ".")
        self._repo.git.clean("-q", "-f", "-d", "-x", "--", _key(folder) or ".")
        self.work_files.discarded(folder)

    def _check_held(self, paths: tuple[str, ...]) -> None:
        """Every write under ``paths`` since the last commit is what HEAD's tree holds there:
        one ``ls-tree`` for the whole commit; WriteNotHeld names the first that is not."""
        folders = [_key(p) for p in paths] or [""]
        checked = self.work_files.committed(folders)
        if not checked:
            return
        names = sorted(checked) if len(checked) <= CHECK_BY_NAME else folders
        held = _tree(self._repo, names)
        for path, sha in sorted(checked.items()):
            if held.get(path) != sha:
                raise WriteNotHeld(
                    f"the commit does not hold the write of {path!r}"
                    + (" (it is missing)" if sha else " (it is still there)")
                )

    def _nothing_staged(self) -> bool:
        status, _, _ = self._repo.git.diff(
            "--cached", "--quiet", with_extended_output=True, with_exceptions=False
        )
        return bool(status == 0)

    def versions(self, path: str, depth: int, within: int = 512) -> list[bytes]:
        """What ``path`` held after each of the last ``depth`` commits of HEAD's history that
        changed it, among HEAD's last ``within`` commits, newest first (a commit that deleted
        it gives nothing; no HEAD, nothing). ``within`` bounds the walk: without it, a path
        changed fewer than ``depth`` times made ``git log`` walk the whole history. One
        ``rev-parse``, one ``git log`` and one blob read per commit, from git's object store
        (the work tree's uncommitted writes are not history)."""
        git = self._repo.git(literal_pathspecs=True)
        bound, _, _ = git.rev_parse(
            "--verify",
            "-q",
            f"HEAD~{within}^{{commit}}",
            with_extended_output=True,
            with_exceptions=False,
        )
        status, out, _ = git.log(
            "-n",
            str(depth),
            "--format=%H",
            f"HEAD~{within}..HEAD" if bound == 0 else "HEAD",
            "--",
            path,
            with_extended_output=True,
            with_exceptions=False,
        )
        if status != 0:
            return []
        found: list[bytes] = []
        for sha in out.split():
            try:
                item = self._repo.commit(sha).tree / path
            except KeyError:
                continue  # deleted by that commit
            if item.type == "blob":
                found.append(item.data_stream.read())
        return found

    def last_commit(self, path: str) -> CommitInfo | None:
        """The newest commit of HEAD's history that changed ``path`` (None: none did, or no
        HEAD): what ``gitops-reverser trace`` shows as the commit that wrote an object."""
        git = self._repo.git(literal_pathspecs=True)
        status, out, _ = git.log(
            "-n",
            "1",
            "--format=%H%x00%an%x00%ae%x00%ct%x00%s",
            "HEAD",
            "--",
            path,
            with_extended_output=True,
            with_exceptions=False,
        )
        if status != 0 or not out.strip():
            return None
        sha, name, email, at, subject = out.strip().split("\0", 4)
        return CommitInfo(sha, name, email, float(at), subject)

    def contains(self, ancestor: str, commit: str) -> bool:
        """Whether ``commit`` has ``ancestor`` in its history (or is it); False when either is
        not in this clone."""
        status, _, _ = self._repo.git.merge_base(
            "--is-ancestor", ancestor, commit, with_extended_output=True, with_exceptions=False
        )
        return bool(status == 0)

    def head(self) -> str:
        """The sha of the work tree's HEAD, read from the ref files (no git process)."""
        return SymbolicReference.dereference_recursive(self._repo, "HEAD")

    def push(self, expected: str | None) -> PushResult:
        """Push HEAD to the branch only if the remote still points at ``expected``."""
        lease = f"--force-with-lease={self.ref}:{expected or ''}"
        status, out, err = self._repo.git.push(
            "--porcelain",
            lease,
            "origin",
            f"HEAD:{self.ref}",
            kill_after_timeout=self.timeout,
            with_extended_output=True,
            with_exceptions=False,
        )
        return _parse_push(self.ref, status, out, err)


def _tree(repo: git.Repo, names: Iterable[str]) -> dict[str, str]:
    """{path: blob sha} of HEAD's tree under ``names`` (empty when there is no HEAD)."""
    status, out, _ = repo.git(literal_pathspecs=True).ls_tree(
        "-r",
        "-z",
        "--full-tree",
        "HEAD",
        "--",
        *(n or "." for n in names),
        with_extended_output=True,
        with_exceptions=False,
        strip_newline_in_stdout=False,
    )
    if status != 0:
        return {}
    held: dict[str, str] = {}
    for record in out.split("\0"):
        meta, _, path = record.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            held[path] = fields[2]
    return held


def _parse_push(ref: str, status: int, out: str, err: str) -> PushResult:
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1].endswith(f":{ref}"):
            return PushResult(pushed=parts[0] in _PUSHED_FLAGS, summary=readable(parts[2]))
    if status == 0:
        return PushResult(pushed=True, summary=readable(out.strip()))
    raise GitTemporary(f"push failed: {err.strip() or out.strip()}")
