"""Reading a remote's ref advertisement, the only source of truth for a branch's tip.

A webhook's ``after`` is a hint; the tip is what ``git ls-remote`` advertises. ``ls-remote``
patterns match ref *tails* (``refs/heads/main`` also matches ``refs/remotes/x/refs/heads/main``),
so the output is filtered by the exact ref name.
"""

from __future__ import annotations

from collections.abc import Mapping

import git

from shared.git.errors import GitPermanent, GitTemporary

#: Environment for every git call: never prompt (an HTTP 401 must fail at once, not hang).
NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false", "SSH_ASKPASS": "/bin/false"}
#: ls-remote is a single round trip; anything slower than this is a sick remote.
LS_REMOTE_TIMEOUT_S = 20


def branch_ref(branch: str) -> str:
    """The full ref of a branch name."""
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"


def parse_advertisement(output: str) -> dict[str, str]:
    """``ls-remote`` output as {ref: sha}."""
    refs: dict[str, str] = {}
    for line in output.splitlines():
        sha, _, ref = line.partition("\t")
        if ref:
            refs[ref.strip()] = sha.strip()
    return refs


def ls_remote(url: str, branch: str, env: Mapping[str, str] | None = None) -> str | None:
    """The sha ``branch`` points at on ``url``, or None when the branch does not exist."""
    ref = branch_ref(branch)
    cmd = git.cmd.Git()
    cmd.update_environment(**NO_PROMPT, **(env or {}))
    try:
        output = str(cmd.ls_remote(url, ref, kill_after_timeout=LS_REMOTE_TIMEOUT_S))
    except git.GitCommandError as err:
        raise _classify(err, url) from err
    return parse_advertisement(output).get(ref)


def _classify(err: git.GitCommandError, url: str) -> Exception:
    text = str(err.stderr or "")
    if any(word in text for word in ("Authentication failed", "terminal prompts disabled", "403")):
        return GitPermanent(f"git refused the credentials for {url}")
    if "not found" in text or "does not appear to be a git repository" in text:
        return GitPermanent(f"no repository at {url}")
    return GitTemporary(f"cannot reach {url}: {text.strip() or err}")
