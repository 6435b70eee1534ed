"""Server-side defaulting and normalisation of built-in kinds, as the real registry stores them.

Only the defaults a client of this project could notice are applied: Secret ``stringData``
folded into base64 ``data`` and ``type: Opaque`` (pkg/apis/core/v1/conversion.go and
defaults.go), a Namespace's ``kubernetes`` finalizer and ``Active`` phase, a Deployment's
replicas/strategy/revisionHistoryLimit/progressDeadlineSeconds (pkg/apis/apps/v1/defaults.go),
and a Service's type, sessionAffinity and port protocol/targetPort. Defaulting runs on every
write, so a no-op write stays a no-op. (Custom resources are defaulted by their schema.)
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

from sandbox.kube.resources import ResourceType

Obj = dict[str, Any]


def _secret(obj: Obj) -> None:
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = dict(obj.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    obj.setdefault("type", "Opaque")


def _namespace(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")
    labels = obj["metadata"].setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


def _deployment(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    pod = spec.setdefault("template", {}).setdefault("spec", {})
    pod.setdefault("restartPolicy", "Always")
    pod.setdefault("terminationGracePeriodSeconds", 30)
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("securityContext", {})
    pod.setdefault("schedulerName", "default-scheduler")
    for container in pod.get("containers") or []:
        _container(container)


def _container(container: Obj) -> None:
    image = str(container.get("image", ""))
    latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
    container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")


def _service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        if "port" in port:
            port.setdefault("targetPort", port["port"])
    obj.setdefault("status", {}).setdefault("loadBalancer", {})


_DEFAULTERS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("apps", "Deployment"): _deployment,
    ("", "Service"): _service,
}


def apply_defaults(rtype: ResourceType, obj: Obj) -> Obj:
    """A defaulted copy of ``obj`` (built-ins only)."""
    defaulter = _DEFAULTERS.get((rtype.group, rtype.kind))
    if defaulter is None or rtype.custom:
        return obj
    result = copy.deepcopy(obj)
    defaulter(result)
    return result


def status_on_create(rtype: ResourceType, obj: Obj) -> None:
    """Drop what a create may not set when the kind has a status subresource."""
    if not rtype.status_subresource or rtype.kind in ("Namespace", "Service"):
        return
    if rtype.custom:
        obj.pop("status", None)
    else:
        obj["status"] = {}
