"""What a GitTarget's Flux Kustomization substitutes when it renders the folder (the
render-fidelity gate's input, issue 27 item 8; ``render_gate``).

Read through the applier's ClusterProvider, as what it last applied is read (``applied``):
the Kustomization, then each ``substituteFrom`` ConfigMap or Secret in its namespace. A
GitTarget without a Kustomization, one whose ClusterProvider does not admit it, or a
Kustomization that does not exist: None (the gate is off; the applier's own condition says
what is wrong). A transient API error is raised: the branch tries the write again later, so it
never refuses a write. A permanent one (the Secret forbidden to the product, say: a tenant's
doing) refuses that GitTarget's writes only (``RenderNotVerifiable``), never the branch's
other GitTargets.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping

from services.branch_worker.applied import applier_client
from services.branch_worker.render_gate import RenderContext
from shared.appliers.reads import get_or_none
from shared.kube.api import KubeClient
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.errors import KubePermanent
from shared.kube.flux import KUSTOMIZATIONS
from shared.kube.kinds import CONFIG_MAPS, SECRETS
from shared.model.config import TargetConfig
from shared.model.postbuild import substitutions
from shared.model.render_fidelity import RENDER_NOT_VERIFIABLE, Mismatch

#: A GitTarget's render context (the branch's work tree asks once per tip, ``WorkTree``).
RenderReader = Callable[[TargetConfig], RenderContext]


def no_substitutions(target: TargetConfig) -> RenderContext:
    """No applier read at all (tests, a worker built without a cluster): the gate is off."""
    return None


class PostBuildReader:
    """``RenderReader`` over the Kubernetes API, through the applier's ClusterProvider."""

    def __init__(self, reader: Callable[[], CrdReader], clusters: ClientFactory) -> None:
        self._reader = reader
        self._clusters = clusters

    def __call__(self, target: TargetConfig) -> RenderContext:
        ref = target.applier
        if ref is None or ref.kind != "Kustomization":
            return None
        try:
            client = applier_client(self._reader, self._clusters, ref, [target.namespace])
            if client is None:
                return None
            return render_context(client, ref.namespace, ref.name)
        except KubePermanent as err:
            return Mismatch(
                f"its Kustomization {ref.namespace}/{ref.name} or a postBuild source of it "
                f"cannot be read: {err}",
                RENDER_NOT_VERIFIABLE,
            )


def render_context(client: KubeClient, namespace: str, name: str) -> RenderContext:
    """The Kustomization ``namespace/name``'s substitutions (None: it has none, or is gone)."""
    kustomization = get_or_none(client, KUSTOMIZATIONS, namespace, name)
    if kustomization is None:
        return None

    def read(kind: str, source: str) -> Mapping[str, str] | None:
        if kind not in ("ConfigMap", "Secret"):
            return None
        obj = get_or_none(
            client, CONFIG_MAPS if kind == "ConfigMap" else SECRETS, namespace, source
        )
        if obj is None:
            return None
        data = obj.get("data") or {}
        return {str(k): str(v) for k, v in data.items()} if kind == "ConfigMap" else _decoded(data)

    return substitutions(kustomization, read)


def _decoded(data: Mapping[str, object]) -> dict[str, str]:
    """A Secret's ``data`` as text (a value that is not base64 of UTF-8 is left out)."""
    out = {}
    for key, value in data.items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            continue
    return out
