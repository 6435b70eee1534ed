"""An ``ssh`` stand-in, so a test can prove git talks to an ``ssh://`` remote with the right key.

These machines cannot run an SSH server, so the sandbox replaces the client instead: a test
puts ``ssh_host.FakeSshHost.bin`` first on ``PATH`` and git runs this program where it would run
OpenSSH's ``ssh``. It follows the contract git documents for the program it runs (git-config
``ssh.variant``, OpenSSH variant: ``[-p port] [-4] [-6] [-o option] [username@]host command``,
after any options written in ``GIT_SSH_COMMAND``; gitprotocol-pack(5) "SSH Transport": the
command is ``git-upload-pack '<path>'`` or ``git-receive-pack '<path>'``), checks what OpenSSH
would check, in OpenSSH's order, and then runs the requested pack program on the host's bare
repository the way sshd would run it for a Git host:

1. the destination must be the registered host and port ("Could not resolve hostname",
   "Connection refused" otherwise);
2. the host key must be known: a line of the ``UserKnownHostsFile`` naming ``host`` (or
   ``[host]:port`` off port 22) with this host's key; unknown hosts pass only when
   ``StrictHostKeyChecking`` is ``no``/``off``/``accept-new`` (sshd(8) "SSH_KNOWN_HOSTS FILE
   FORMAT"; hashed names and markers are not understood). ``~/.ssh`` is never read;
3. the user must be the registered one, and one ``-i``/``IdentityFile`` file must hold exactly
   a registered key; files that others may read are ignored, as ssh ignores them
   ("UNPROTECTED PRIVATE KEY FILE!"); otherwise "Permission denied (publickey)", exit 255.

The pack program runs with a fresh environment (``PATH``, ``HOME`` and, when git sent it,
``GIT_PROTOCOL``), as on a real server. Pushes through it send no webhooks. Every call is
recorded (arguments and verdict) for the test to read. This file uses only the standard
library: the shim runs it by path.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import struct
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: OpenSSH options that take a value (ssh(1) SYNOPSIS); every other letter is a flag.
VALUED = set("BbcDEeFIiJLlmOoPpQRSWw")
FLAGS = set("46AaCfGgKkMNnqsTtVvXxYy")
PACK_PROGRAMS = {"git-upload-pack": "upload-pack", "git-receive-pack": "receive-pack"}
LENIENT = {"no", "off", "accept-new"}
SSH_FAILURE = 255  # ssh's exit status for its own errors


@dataclass(frozen=True, slots=True)
class Config:
    """What the fake host accepts; written by ``ssh_host.FakeSshHost``, read by every call."""

    root: str
    host: str
    port: int
    user: str
    host_key: str
    keys: list[str] = field(default_factory=list)  # sha256 hex of each accepted identity
    log: str = ""

    @classmethod
    def load(cls, path: Path) -> Config:
        """The config a shim names."""
        return cls(**json.loads(path.read_text()))


@dataclass(frozen=True, slots=True)
class Call:
    """One run of the fake: the arguments git gave it and what it decided."""

    argv: list[str]
    verdict: str  # "ok", or the reason it refused


@dataclass(slots=True)
class Invocation:
    """An ssh command line, parsed the way OpenSSH reads it."""

    identities: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)  # lower-case name -> first value
    port: str = ""
    login: str = ""
    destination: str = ""
    command: str = ""
    flags: set[str] = field(default_factory=set)


class Refused(Exception):
    """The fake refuses the call, as ssh would, with ssh's words and exit status."""

    def __init__(self, message: str, status: int = SSH_FAILURE) -> None:
        super().__init__(message)
        self.status = status


def host_key_for(host: str) -> str:
    """A well-formed ed25519 public key (type and base64 blob) that stands for ``host``."""
    kind = b"ssh-ed25519"
    point = hashlib.sha256(host.encode()).digest()
    blob = struct.pack(">I", len(kind)) + kind + struct.pack(">I", len(point)) + point
    return f"ssh-ed25519 {base64.b64encode(blob).decode()}"


def known_host_name(host: str, port: int) -> str:
    """How a known_hosts line names a host: bare on port 22, ``[host]:port`` elsewhere."""
    return host if port == 22 else f"[{host}]:{port}"


def parse(argv: Sequence[str]) -> Invocation:
    """Options, destination and remote command of an OpenSSH command line."""
    call = Invocation()
    rest = list(argv)
    while rest and rest[0].startswith("-") and len(rest[0]) > 1:
        word = rest.pop(0)
        letter = word[1]
        if letter in VALUED:
            value = word[2:] or (rest.pop(0) if rest else "")
            _take(call, letter, value)
        elif set(word[1:]) <= FLAGS:
            call.flags |= set(word[1:])
        else:
            raise Refused(f"unknown option -- {word[1:]}")
    if rest:
        call.destination = rest.pop(0)
    call.command = " ".join(rest)  # ssh joins the remaining words with spaces
    return call


def _take(call: Invocation, letter: str, value: str) -> None:
    if letter == "i":
        call.identities.append(value)
    elif letter == "p":
        call.port = call.port or value
    elif letter == "l":
        call.login = call.login or value
    elif letter == "o":
        name, _, setting = value.replace("=", " ", 1).partition(" ")
        call.options.setdefault(name.lower(), setting.strip())  # the first value wins


def check(call: Invocation, config: Config) -> tuple[str, Path]:
    """The pack program and repository the call may run; Refused when ssh would refuse."""
    user, _, host = call.destination.rpartition("@")
    user = user or call.login or call.options.get("user", "")
    if host != config.host:
        raise Refused(f"ssh: Could not resolve hostname {host}: Name or service not known")
    port = int(call.port or call.options.get("port", "22"))
    if port != config.port:
        raise Refused(f"ssh: connect to host {host} port {port}: Connection refused")
    _check_host_key(call, config, port)
    _check_identity(call, config, user)
    return _pack_command(call.command, Path(config.root))


def _check_host_key(call: Invocation, config: Config, port: int) -> None:
    name = known_host_name(config.host, port)
    known = call.options.get("userknownhostsfile", "")
    listed = _known_keys(Path(known), name) if known else []
    if config.host_key in listed:
        return
    if listed:
        raise Refused(
            "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\n"
            "Host key verification failed."
        )
    if call.options.get("stricthostkeychecking", "ask").lower() in LENIENT:
        return
    raise Refused(
        f"No ED25519 host key is known for {name} and you have requested strict checking.\n"
        "Host key verification failed."
    )


def _known_keys(path: Path, name: str) -> list[str]:
    if not path.is_file():
        return []
    keys = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0].startswith(("#", "@", "|")):
            continue
        if name in fields[0].split(","):
            keys.append(f"{fields[1]} {fields[2]}")
    return keys


def _check_identity(call: Invocation, config: Config, user: str) -> None:
    files = list(call.identities)
    if "identityfile" in call.options:
        files.append(call.options["identityfile"])
    for name in files:
        path = Path(name)
        if not path.is_file():
            print(f"Warning: Identity file {name} not accessible: No such file.", file=sys.stderr)
        elif path.stat().st_mode & 0o077:
            print(f"WARNING: UNPROTECTED PRIVATE KEY FILE! {name} is ignored.", file=sys.stderr)
        elif user == config.user and digest(path.read_bytes()) in config.keys:
            return
    raise Refused(f"{user}@{config.host}: Permission denied (publickey).")


def _pack_command(command: str, root: Path) -> tuple[str, Path]:
    words = shlex.split(command)
    if len(words) != 2 or words[0] not in PACK_PROGRAMS:
        raise Refused(f"fatal: unrecognised command '{command}'", status=1)
    repo = (root / words[1].lstrip("/")).resolve()
    if root.resolve() not in repo.parents or not (repo / "HEAD").is_file():
        raise Refused(f"fatal: '{words[1]}' does not appear to be a git repository", status=128)
    return PACK_PROGRAMS[words[0]], repo


def digest(data: bytes) -> str:
    """How an accepted identity is remembered: never the key itself."""
    return hashlib.sha256(data).hexdigest()


def _record(config: Config, argv: Sequence[str], verdict: str) -> None:
    if config.log:
        with open(config.log, "a", encoding="utf-8") as log:
            log.write(json.dumps(asdict(Call(list(argv), verdict))) + "\n")


def _server_env(root: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": root}
    if "GIT_PROTOCOL" in os.environ:  # git sends it with SendEnv; Git hosts accept it
        env["GIT_PROTOCOL"] = os.environ["GIT_PROTOCOL"]
    return env


def main(argv: Sequence[str]) -> int:
    """``fake_ssh.py CONFIG <ssh arguments>``: refuse as ssh would, or become the pack program."""
    config = Config.load(Path(argv[0]))
    args = list(argv[1:])
    try:
        call = parse(args)
        if "G" in call.flags:  # git's probe for an OpenSSH-like client (ssh.variant=auto)
            _record(config, args, "ok")
            return 0
        program, repo = check(call, config)
    except Refused as refusal:
        _record(config, args, str(refusal).splitlines()[-1])
        print(refusal, file=sys.stderr)
        return refusal.status
    _record(config, args, "ok")
    os.execvpe("git", ["git", program, str(repo)], _server_env(config.root))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
