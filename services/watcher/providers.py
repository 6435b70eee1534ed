"""GitProviders: their credentials Secret and an ls-remote probe, reported in status.

A GitProvider whose URL carries credentials is stalled with ``CredentialsInURL`` and never
probed (T3). A GitProvider whose ``spec.secretRef`` names a Secret that does not exist is
stalled with ``SecretNotFound`` (no probe is made without the credentials it names); otherwise the
repository is probed (``ConnectionFailed`` when it does not answer, stalled when git refused
the credentials or the repository, reconciling when the remote may come back).

Its commit-message templates are checked too (``shared.model.templates``: parsed, every field
checked, run on sample data): a bad one stalls the GitProvider with ``CommitConfigInvalid`` and
a message naming the problem. That problem does not count against its access to a branch
(T1) and is not passed on to its GitTargets: their writes go on with the built-in wording,
and a GitTarget learns of it as ``InvalidCommitTemplate`` when its branch worker commits (C1).
"""

from __future__ import annotations

from collections.abc import Mapping

from services.watcher.probe import Prober
from services.watcher.status import StatusPublisher
from shared.decide.conditions import Problem, trio
from shared.decide.urls import CREDENTIALS_IN_URL, MESSAGE, has_credentials
from shared.git.credentials import KnownHostsMissing, known_hosts_of, with_known_hosts
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.kinds import GIT_PROVIDERS
from shared.model import templates
from shared.model.crds import GitProviderView

SECRET_NOT_FOUND = "SecretNotFound"
SECRET_UNREADABLE = "SecretUnreadable"
#: spec.knownHostsRef names an object that is absent or has no known hosts (SSH fails closed).
KNOWN_HOSTS_NOT_FOUND = "KnownHostsNotFound"
KNOWN_HOSTS_UNREADABLE = "KnownHostsUnreadable"
#: The facts' reason (2.1) for a GitProvider whose commit templates do not check.
COMMIT_CONFIG_INVALID = "CommitConfigInvalid"

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
    try:
        hosts = known_hosts_of(reader.object_data, ns, provider.known_hosts_ref)
    except KubeError as err:
        return [Problem(KNOWN_HOSTS_UNREADABLE, str(err), permanent=False)]
    except KnownHostsMissing as err:
        # recoverable: creating the object (or the key) needs no change of the GitProvider
        return [Problem(KNOWN_HOSTS_NOT_FOUND, str(err), permanent=False)]
    if hosts is not None:
        secret = with_known_hosts(secret or {}, hosts)
    problem = prober.probe(provider, secret)
    return [problem] if problem else []


def template_problems(provider: GitProviderView) -> list[Problem]:
    """Why a GitProvider's commit-message templates cannot be used (empty when they can)."""
    found: list[Problem] = []
    for template, variables in (
        (provider.message_one, templates.EVENT),
        (provider.message_many, templates.GROUP),
    ):
        try:
            templates.check(template, variables)
        except templates.TemplateError as err:
            found.append(Problem(COMMIT_CONFIG_INVALID, str(err)))
    return found


def reconcile_providers(
    providers: list[GitProviderView], reader: CrdReader, prober: Prober, status: StatusPublisher
) -> dict[ProviderKey, list[Problem]]:
    """Every GitProvider's problems, with its conditions written when they changed."""
    found: dict[ProviderKey, list[Problem]] = {}
    for provider in providers:
        problems = provider_problems(provider, reader, prober)
        found[(provider.meta.namespace, provider.meta.name)] = problems
        shown = problems + template_problems(provider)
        wanted = trio(shown, ready_message="the repository answered ls-remote")
        status.publish(GIT_PROVIDERS, provider.meta, provider.conditions, wanted)
    prober.forget({p.meta.uid for p in providers})
    return found
