"""GitProviders: their credentials Secret and an ls-remote probe, reported in status.

A GitProvider whose URL carries credentials is stalled with ``CredentialsInURL`` and never
probed (T3). A GitProvider whose ``spec.secretRef`` names a Secret that does not exist is
stalled with ``SecretNotFound`` (no probe is made without the credentials it names); otherwise the
repository is probed (``ConnectionFailed`` when it does not answer, stalled when git refused
the credentials or the repository, reconciling when the remote may come back).
"""

from __future__ import annotations

from collections.abc import Mapping

from services.watcher.probe import Prober
from services.watcher.status import StatusPublisher
from shared.decide.conditions import Problem, trio
from shared.decide.urls import CREDENTIALS_IN_URL, MESSAGE, has_credentials
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.kinds import GIT_PROVIDERS
from shared.model.crds import GitProviderView

SECRET_NOT_FOUND = "SecretNotFound"
SECRET_UNREADABLE = "SecretUnreadable"

ProviderKey = tuple[str, str]  # (namespace, name)


def provider_problems(
    provider: GitProviderView, reader: CrdReader, prober: Prober
) -> list[Problem]:
    """Why a GitProvider is not Ready (empty when it is)."""
    if has_credentials(provider.url):
        return [Problem(CREDENTIALS_IN_URL, MESSAGE)]  # never probed: git would see them (T3)
    ns = provider.meta.namespace
    secret: Mapping[str, bytes] | None = None
    if provider.secret_name:
        try:
            secret = reader.secret_data(ns, provider.secret_name)
        except KubeError as err:
            return [Problem(SECRET_UNREADABLE, str(err), permanent=False)]
        if secret is None:
            return [Problem(SECRET_NOT_FOUND, f"Secret {ns}/{provider.secret_name} not found")]
    problem = prober.probe(provider, secret)
    return [problem] if problem else []


def reconcile_providers(
    providers: list[GitProviderView], reader: CrdReader, prober: Prober, status: StatusPublisher
) -> dict[ProviderKey, list[Problem]]:
    """Every GitProvider's problems, with its conditions written when they changed."""
    found: dict[ProviderKey, list[Problem]] = {}
    for provider in providers:
        problems = provider_problems(provider, reader, prober)
        found[(provider.meta.namespace, provider.meta.name)] = problems
        wanted = trio(problems, ready_message="the repository answered ls-remote")
        status.publish(GIT_PROVIDERS, provider.meta, provider.conditions, wanted)
    prober.forget({p.meta.uid for p in providers})
    return found
