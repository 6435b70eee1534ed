"""Reading a remote's ref advertisement, the only source of truth for a branch's tip.

A webhook's ``after`` is a hint; the tip is what ``git ls-remote`` advertises. ``ls-remote``
patterns match ref *tails* (``refs/heads/main`` also matches ``refs/remotes/x/refs/heads/main``),
so the output is filtered by the exact ref name.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

import git

from shared.git.errors import GitPermanent, GitTemporary

#: A remote that sends fewer than LOW_SPEED_BYTES a second for LOW_SPEED_S seconds is given
#: up on by git itself (HTTP: ``http.lowSpeedLimit``/``lowSpeedTime``); ssh gives up on a host
#: that does not answer the connection in SSH_CONNECT_S, or a keep-alive for 3 x SSH_ALIVE_S.
LOW_SPEED_BYTES = 1000
LOW_SPEED_S = 30
SSH_CONNECT_S = 15
SSH_ALIVE_S = 15
#: ssh's options for every git call: bounded connect and silence, never a prompt.
SSH_OPTIONS = (
    "-o", f"ConnectTimeout={SSH_CONNECT_S}",
    "-o", f"ServerAliveInterval={SSH_ALIVE_S}",
    "-o", "ServerAliveCountMax=3",
    "-o", "BatchMode=yes",
)  # fmt: skip
#: Environment for every git call: never prompt (an HTTP 401 must fail at once, not hang), and
#: never wait on a silent remote for ever (C3, T4).
NO_PROMPT = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "/bin/false",
    "SSH_ASKPASS": "/bin/false",
    "GIT_HTTP_LOW_SPEED_LIMIT": str(LOW_SPEED_BYTES),
    "GIT_HTTP_LOW_SPEED_TIME": str(LOW_SPEED_S),
    "GIT_SSH_COMMAND": shlex.join(("ssh", *SSH_OPTIONS)),
}
#: An object name as git prints it (SHA-1, or SHA-256 in a repository that uses it).
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: ls-remote is a single round trip; anything slower than this is a sick remote.
LS_REMOTE_TIMEOUT_S = 20
#: The longest a fetch or a push may take, whatever the remote does: then git is killed and
#: the branch tries again later (its own branch only: other branches run on other threads).
NETWORK_TIMEOUT_S = 120.0


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
    cmd.update_environment(**{**NO_PROMPT, **(env or {})})
    try:
        output = str(cmd.ls_remote(url, ref, kill_after_timeout=LS_REMOTE_TIMEOUT_S))
    except git.GitCommandError as err:
        raise _classify(err, url) from err
    sha = parse_advertisement(output).get(ref)
    if sha is not None and not _SHA.fullmatch(sha):  # the tip is stored and compared as is
        raise GitTemporary(f"{url} advertised {ref} at {sha[:80]!r}, not an object name")
    return sha


#: git's words for a remote that refused the credentials (prompts are disabled, so a 401 shows
#: as "terminal prompts disabled"; a 403 as curl's "returned error: 403"). Matched as phrases:
#: the text also holds the URL, whose port may hold the digits 403.
_REFUSED = re.compile(r"Authentication failed|terminal prompts disabled|returned error: 403\b")


def _classify(err: git.GitCommandError, url: str) -> Exception:
    text = str(err.stderr or "")
    if _REFUSED.search(text):
        return GitPermanent(f"git refused the credentials for {url}")
    if "not found" in text or "does not appear to be a git repository" in text:
        return GitPermanent(f"no repository at {url}")
    return GitTemporary(f"cannot reach {url}: {text.strip() or err}")
