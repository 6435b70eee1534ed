"""Can we reach a GitProvider's repository with its credentials? An ``ls-remote`` probe.

The probe reads the remote's ref advertisement with the credentials of the GitProvider's
Secret, turned into git's environment by the resolver every caller shares
(``shared.git.credentials``): HTTP credentials travel as an ``http.extraHeader``, never in the
URL, which git would print in errors; an SSH ``identity`` and ``known_hosts`` are written to a
private temporary folder deleted after the one call. Results are kept
for ``ttl_s`` per GitProvider generation and credentials, so a converged cluster does not
ls-remote every reconcile; and a result stands for every GitProvider naming the same
repository with the same credentials, so many GitProviders over one repository (1,000 over 200
in the scale benchmark) probe it once per period, not once each. A GitProvider whose
generation moved is probed again, so an edit gets fresh feedback.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from shared.decide.conditions import Problem
from shared.git.credentials import environment_once
from shared.git.errors import GitError, GitPermanent
from shared.git.remote import ls_remote
from shared.model.crds import GitProviderView

CONNECTION_FAILED = "ConnectionFailed"
#: How long a probe result stands before the repository is probed again.
DEFAULT_PROBE_TTL_S = 300.0
#: The ref probed: any answer (even "no such branch") proves the repository is reachable.
PROBE_REF = "HEAD"

LsRemote = Callable[[str, str, Mapping[str, str]], str | None]


def _digest(head: str, secret: Mapping[str, bytes] | None) -> str:
    digest = hashlib.sha256(head.encode())
    for key in sorted(secret or {}):
        digest.update(b"\0" + key.encode() + b"\0" + (secret or {})[key])
    return digest.hexdigest()


def _fingerprint(provider: GitProviderView, secret: Mapping[str, bytes] | None) -> str:
    return _digest(f"{provider.meta.uid}\0{provider.meta.generation}", secret)


def _repository(url: str, secret: Mapping[str, bytes] | None) -> str:
    return _digest(url, secret)


@dataclass(frozen=True, slots=True)
class _Result:
    fingerprint: str
    at: float
    problem: Problem | None


class Prober:
    """ls-remote probes of GitProviders, cached per generation and credentials."""

    def __init__(
        self,
        clock: Callable[[], float],
        ttl_s: float = DEFAULT_PROBE_TTL_S,
        lister: LsRemote = ls_remote,
    ) -> None:
        self._clock = clock
        self._ttl_s = ttl_s
        self._lister = lister
        self._results: dict[str, _Result] = {}
        self._by_repository: dict[str, _Result] = {}  # keyed by URL and credentials

    def probe(
        self, provider: GitProviderView, secret: Mapping[str, bytes] | None
    ) -> Problem | None:
        """None when the repository answered; else a ConnectionFailed problem."""
        fingerprint = _fingerprint(provider, secret)
        now = self._clock()
        known = self._results.get(provider.meta.uid)
        if known and known.fingerprint == fingerprint and now - known.at < self._ttl_s:
            return known.problem
        repository = _repository(provider.url, secret)
        sibling = self._by_repository.get(repository)
        unedited = known is None or known.fingerprint == fingerprint
        if unedited and sibling and now - sibling.at < self._ttl_s:
            self._results[provider.meta.uid] = _Result(fingerprint, sibling.at, sibling.problem)
            return sibling.problem
        problem = self._ls_remote(provider.url, secret or {})
        self._results[provider.meta.uid] = _Result(fingerprint, now, problem)
        self._by_repository[repository] = _Result(repository, now, problem)
        return problem

    def _ls_remote(self, url: str, secret: Mapping[str, bytes]) -> Problem | None:
        with environment_once(secret) as env:
            try:
                self._lister(url, PROBE_REF, env)
            except GitError as err:
                permanent = isinstance(err, GitPermanent)
                return Problem(CONNECTION_FAILED, str(err), permanent=permanent)
        return None

    def forget(self, keep: set[str]) -> None:
        """Drop the results of GitProviders that are gone."""
        for uid in [uid for uid in self._results if uid not in keep]:
            del self._results[uid]
        now = self._clock()
        for key in [k for k, r in self._by_repository.items() if now - r.at >= self._ttl_s]:
            del self._by_repository[key]
