"""N2: git's words leave ``shared.git`` as valid UTF-8, whatever bytes the remote sent.

GitPython decodes git's output with ``surrogateescape``, so a host answering bytes that are not
UTF-8 put lone surrogates into the error text; stored as the branch's stall reason, redis-py
raised ``UnicodeEncodeError`` and the branch worker exited on every restart.
"""

from __future__ import annotations

import git
import pytest

from shared.git import remote
from shared.git.errors import GitPermanent, GitTemporary, PathEscapes, readable
from shared.git.remote import ls_remote
from shared.git.workspace import _parse_push

GARBAGE = b"fatal: protocol error: bad line length character: \x92\xff\x00\x1b[31m"


def _as_gitpython_decodes(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("kind", [GitTemporary, GitPermanent, PathEscapes])
def test_an_error_holding_a_remotes_garbage_is_valid_utf_8(kind: type[Exception]) -> None:
    err = kind(f"fetch failed: {_as_gitpython_decodes(GARBAGE)}")
    text = str(err)
    assert text.encode("utf-8").decode("utf-8") == text  # encodes: no lone surrogate
    assert text.startswith("fetch failed: fatal: protocol error: bad line length character: ")
    assert "\x00" not in text and "\x1b" not in text


def test_readable_keeps_what_is_utf_8_and_replaces_the_rest() -> None:
    assert readable("caf\u00e9 \u2713 tab\tline\n") == "caf\u00e9 \u2713 tab\tline\n"
    assert readable(_as_gitpython_decodes(b"a\xffb")) == "a\ufffdb"
    assert readable("lone \ud800 surrogate") == "lone ? surrogate"


def test_a_push_summary_from_the_remote_is_valid_utf_8() -> None:
    out = _as_gitpython_decodes(b"To x\n!\tHEAD:refs/heads/main\t[remote rejected] (\xfe\xff)\n")
    result = _parse_push("refs/heads/main", 1, out, "")
    assert not result.pushed
    assert result.summary == "[remote rejected] (\ufffd\ufffd)"


def test_a_tip_that_is_not_an_object_name_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The advertised tip is stored and compared as it is: a host advertising anything else
    (garbage that parsed as a ref line) is a failed call, not a tip."""
    advertised = _as_gitpython_decodes(b"\x92\xffzz\trefs/heads/main\n")
    monkeypatch.setattr(git.cmd.Git, "ls_remote", lambda *args, **kwargs: advertised)
    with pytest.raises(GitTemporary, match="not an object name") as caught:
        ls_remote("http://127.0.0.1:1/x.git", "main")
    assert str(caught.value).encode("utf-8")
    good = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setattr(
        git.cmd.Git, "ls_remote", lambda *args, **kwargs: f"{good}\trefs/heads/main"
    )
    assert ls_remote("http://127.0.0.1:1/x.git", "main") == good


def test_a_port_with_the_digits_403_is_not_a_refusal() -> None:
    """The outside check's CI run: a certificate error from ``https://127.0.0.1:36403/...`` was
    reported as refused credentials, since the URL's port held "403"."""
    url = "https://127.0.0.1:36403/team/private.git"
    stderr = f"fatal: unable to access '{url}/': server certificate verification failed."
    err = remote._classify(git.GitCommandError(["git", "ls-remote"], 128, stderr=stderr), url)
    assert isinstance(err, GitTemporary) and "certificate" in str(err)
    refused = "fatal: unable to access 'x': The requested URL returned error: 403"
    err = remote._classify(git.GitCommandError(["git", "ls-remote"], 128, stderr=refused), url)
    assert isinstance(err, GitPermanent) and "refused the credentials" in str(err)
