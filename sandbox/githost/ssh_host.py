"""The test's side of the fake SSH Git host: bare repositories reached by ``ssh://`` URLs.

``FakeSshHost`` writes the configuration ``fake_ssh`` reads and an executable ``ssh`` shim in
``bin``; a test that puts ``bin`` first on ``PATH`` makes every git it starts talk "SSH" to
this host, which accepts only the identities registered with ``allow`` and presents a host key
that only ``known_hosts`` knows. See ``fake_ssh`` for what is checked and the facts followed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from sandbox.githost import fake_ssh, gitrepo
from sandbox.githost.fake_ssh import Call, Config


class FakeSshHost:
    """Bare repositories under ``folder/repos`` behind a fake ``ssh``, with the keys it accepts."""

    def __init__(self, folder: Path, host: str = "sandbox.test", port: int = 2222) -> None:
        self.folder = folder
        self.root = folder / "repos"
        self.bin = folder / "bin"
        self.root.mkdir(parents=True, exist_ok=True)
        self.bin.mkdir(parents=True, exist_ok=True)
        self._config_path = folder / "config.json"
        self._config = Config(
            str(self.root),
            host,
            port,
            "git",
            fake_ssh.host_key_for(host),
            log=str(folder / "calls.jsonl"),
        )
        self._save()
        self._write_shim()

    def allow(self, identity: bytes) -> None:
        """Accept ``identity`` (the bytes of a private key file) from now on."""
        keys = [*self._config.keys, fake_ssh.digest(identity)]
        self._config = dataclasses.replace(self._config, keys=keys)
        self._save()

    def create_repo(
        self, name: str, files: Mapping[str, bytes], when: float, branch: str = "main"
    ) -> str:
        """A bare repository ``owner/name`` with one commit of ``files``; returns its URL."""
        path = self.repo_path(name)
        gitrepo.init_bare(path, branch)
        gitrepo.write_initial_commit(path, branch, files, when)
        return self.url(name)

    def repo_path(self, name: str) -> Path:
        """Where the bare repository ``owner/name`` lives."""
        return self.root / f"{name.removesuffix('.git')}.git"

    def url(self, name: str) -> str:
        """The ``ssh://`` URL of the repository ``owner/name``."""
        config = self._config
        return f"ssh://{config.user}@{config.host}:{config.port}/{name.removesuffix('.git')}.git"

    @property
    def known_hosts(self) -> bytes:
        """A ``known_hosts`` file that knows this host's key (``[host]:port`` off port 22)."""
        config = self._config
        name = fake_ssh.known_host_name(config.host, config.port)
        return f"{name} {config.host_key}\n".encode()

    def path_with_shim(self) -> str:
        """A ``PATH`` that finds the fake ``ssh`` before any real one."""
        return f"{self.bin}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"

    def calls(self) -> list[Call]:
        """Every call the fake received so far, in order."""
        log = Path(self._config.log)
        lines = log.read_text().splitlines() if log.is_file() else []
        return [Call(**json.loads(line)) for line in lines]

    def _save(self) -> None:
        self._config_path.write_text(json.dumps(dataclasses.asdict(self._config)))

    def _write_shim(self) -> None:
        program = Path(fake_ssh.__file__).resolve()
        words = [sys.executable, str(program), str(self._config_path)]
        shim = self.bin / "ssh"
        shim.write_text(f'#!/bin/sh\nexec {shlex.join(words)} "$@"\n')
        shim.chmod(0o755)
