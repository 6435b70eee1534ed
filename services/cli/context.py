"""One invocation's connections, made when a command first needs them.

``get`` with no Redis reachable still prints what the cluster says (the Redis columns read
``?`` and one warning goes to stderr); ``inspect`` and ``trace`` need Redis and fail without
it. Time is injected (``clock``) so ``reconcile``'s request value is a test's choice.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from services.branch_worker.stores import Stores
from services.cli.errors import CliError
from services.cli.install import Install, find_install, with_address
from shared.kube.api import KubeClient
from shared.kube.errors import KubeError
from shared.kube.userconfig import UserCluster, user_cluster
from shared.settings import Settings
from shared.store.connection import connect
from shared.store.health import RedisProbe


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Context:
    """The global flags and what they lead to."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    all_namespaces: bool = False
    output: str = "table"
    redis_url: str | None = None
    key_prefix: str | None = None
    redis_address: str | None = None
    install_namespace: str = ""
    clock: Callable[[], datetime] = _utc_now
    _cluster: UserCluster | None = field(default=None, repr=False)
    _settings: Settings | None = field(default=None, repr=False)
    _stores: Stores | None = field(default=None, repr=False)

    def cluster(self) -> UserCluster:
        """The person's cluster (kubeconfig, context), loaded once."""
        if self._cluster is None:
            self._cluster = user_cluster(self.kubeconfig, self.context)
        return self._cluster

    @property
    def kube(self) -> KubeClient:
        """The person's client of the cluster."""
        return self.cluster().client

    def ns(self) -> str:
        """``-n``, else the context's namespace."""
        return self.namespace or self.cluster().namespace

    def list_namespace(self) -> str:
        """Where a listing looks: "" (every namespace) with ``-A``."""
        return "" if self.all_namespaces else self.ns()

    def install(self) -> Install:
        """The install the cluster shows (flags not consulted)."""
        return find_install(self.kube, self.install_namespace)

    def settings(self) -> Settings:
        """Redis URL and key prefix: the flags, else the install's."""
        if self._settings is None:
            url, prefix = self.redis_url, self.key_prefix
            if url is None or prefix is None:
                found = self.install()
                url, prefix = url or found.redis_url, prefix or found.key_prefix
            if self.redis_address:
                url = with_address(url, self.redis_address)
            self._settings = Settings(redis_url=url, key_prefix=prefix)
        return self._settings

    def redis_problem(self) -> str | None:
        """Why Redis cannot be used (None: it answers)."""
        try:
            url = self.settings().redis_url
        except (CliError, KubeError) as err:
            return str(err)
        probe = RedisProbe(url, timeout_s=3.0)
        try:
            return probe()
        finally:
            probe.close()

    def stores(self) -> Stores:
        """The product's Redis adapters over the install's Redis; CliError when unreachable."""
        if self._stores is None:
            self.settings()  # an install not found is that, not "Redis unreachable"
            problem = self.redis_problem()
            if problem:
                raise CliError(f"Redis: {problem}")
            settings = self.settings()
            client = connect(settings.redis_url, client_name="gitops-reverser-cli")
            self._stores = Stores.build(client, settings)
        return self._stores

    def optional_stores(self) -> Stores | None:
        """The stores, or None with one warning on stderr (``get`` shows the cluster alone)."""
        try:
            return self.stores()
        except (CliError, KubeError) as err:
            sys.stderr.write(f"warning: no Redis columns: {err}\n")
            return None
