"""The webhook applier: one signed POST per request, to an applier the product cannot name (D7).

A CI job or an in-house deployer is asked by ``spec.applier.webhook``: a URL, a Secret in the
GitTarget's namespace whose ``hmacKey`` signs the body, and a timeout. The check (S2) reads
that Secret and judges the URL; an attempt reads the Secret again (only in the applier's
namespace, which for a webhook is the GitTarget's own), and, once the dispatcher found the
branch quiet at the commit (D3), POSTs the body built by ``shared.decide.webhook``. The POST is
synchronous: a 2xx answer is a request handled at once (Delivered), anything else, or no
answer in time, turns the request down (Failed, with the status or the reason).

The Secret is read through ``shared.kube`` with the client of the applier's ClusterProvider
(the GitTarget's own unless ``spec.applier.clusterProviderRef`` names another); the POST goes
through ``shared.http``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from shared.appliers.interface import Refused
from shared.decide.applier_check import Subject
from shared.decide.conditions import Wanted
from shared.decide.webhook import body, check_webhook, delivered, headers, secret_problem
from shared.http import HttpError, post
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.model.appliers import KINDS, ApplierKind, Reason
from shared.model.requests import ApplyRequest
from shared.model.webhook import HMAC_KEY, WebhookEndpoint, url_problem


@dataclass(frozen=True, slots=True)
class WebhookSent:
    """A POST the endpoint answered with a 2xx: it has handled the request (D6 at once)."""

    plan: str

    def handled(self) -> bool:
        """The answer came back with the POST itself."""
        return True


@dataclass(frozen=True, slots=True)
class WebhookPending:
    """The endpoint and its key, read just now, for one request."""

    endpoint: WebhookEndpoint
    key: bytes
    request_: ApplyRequest
    clock: Callable[[], float]

    def request(self, reasons: Iterable[Reason], token: str) -> WebhookSent | Refused:
        """D7: one signed POST; 2xx is handled, anything else turns the request down."""
        held = {r: self.request_.reasons.get(r, []) for r in reasons}
        req = self.request_
        raw = body(req.url, req.branch, req.commit, held, token)
        signed = headers(self.key, token, int(self.clock()), raw)
        try:
            answer = post(self.endpoint.url, raw, signed, self.endpoint.timeout_s)
        except HttpError as err:
            return Refused(f"webhook {self.endpoint.url}: {err}")
        line = f"HTTP {answer.status} {answer.reason}".rstrip()
        if not delivered(answer.status):
            return Refused(f"webhook {self.endpoint.url} answered {line}")
        return WebhookSent(f"post answered {line}")


def _secret(
    client: KubeClient, namespace: str, endpoint: WebhookEndpoint
) -> dict[str, bytes] | None:
    """The Secret's data, read in ``namespace`` only (the GitTarget's, T1)."""
    return CrdReader(client).secret_data(namespace, endpoint.secret_name)


class WebhookApplier:
    """``spec.applier.webhook``: any applier that takes a signed HTTP POST."""

    kind: ApplierKind = "Webhook"
    product = KINDS[kind].product

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock

    def validate(self, client: KubeClient, subject: Subject, min_interval_s: float) -> Wanted:
        """S2: the URL is usable and the Secret in the GitTarget's namespace holds the key."""
        endpoint = subject.webhook
        secret = None
        if endpoint is not None and url_problem(endpoint.url) is None:
            secret = _secret(client, subject.namespace, endpoint)
        return check_webhook(subject, endpoint, secret)

    def read(self, client: KubeClient, request: ApplyRequest) -> WebhookPending | Refused:
        """The key for one attempt, or why the endpoint cannot be asked."""
        endpoint = request.webhook
        if endpoint is None:
            return Refused("InvalidApplier: the request names no webhook endpoint")
        bad_url = url_problem(endpoint.url)
        if bad_url is not None:
            return Refused(f"InvalidApplier: {bad_url}")
        namespace = request.applier.namespace  # a webhook's namespace is its GitTarget's
        secret = _secret(client, namespace, endpoint)
        problem = secret_problem(endpoint, namespace, secret)
        if problem is not None:
            return Refused(": ".join(problem))
        key = secret[HMAC_KEY] if secret else b""
        return WebhookPending(endpoint, key, request, self._clock)
