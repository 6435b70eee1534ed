"""Whether the Kubernetes API answers, for a process's ``/readyz`` (``shared.health``).

The probe reads ``/version`` from the cluster the product runs in: the cheapest request there
is, allowed to every client by the API server's default ``system:public-info-viewer`` role, so
it proves the API is reachable without needing a permission of its own (what the process may
do is the GitTarget's conditions' business, not readiness's). Remote clusters named by
ClusterProviders are not probed: one unreachable tenant's cluster must not take the whole
process out of service (T1).
"""

from __future__ import annotations

from kubernetes.client import VersionApi

from shared.kube.clients import ClientFactory
from shared.kube.errors import KubeError, translated

#: Longest the ``/version`` request may take, connecting included.
PROBE_TIMEOUT_S = 1.0


class ApiProbe:
    """``probe()`` is None when the local API answers ``/version`` in time, else why not."""

    def __init__(self, factory: ClientFactory, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self._factory = factory
        self._timeout_s = timeout_s

    def __call__(self) -> str | None:
        try:
            with translated("GET /version on the local cluster"):
                api = VersionApi(self._factory.local().client.api_client)
                api.get_code(_request_timeout=(self._timeout_s, self._timeout_s))
        except KubeError as err:
            cause = err.__cause__ or err
            return f"Kubernetes API unreachable ({type(cause).__name__})"
        return None
