"""A kustomization's own transformers, in kustomize's order for the subset: ``namespace``,
``commonLabels`` and ``labels``, ``commonAnnotations``, ``replicas``, ``images``."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from shared.kustomize.refusals import Unsupported
from shared.kustomize.subset import Kustomization
from shared.kustomize.tree import Path, Rendered

#: Kinds the replicas field sets ``spec.replicas`` of (kustomize's replicas reference).
REPLICA_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"})
#: Kinds with a pod template and a label selector (``spec.selector.matchLabels``).
WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})
TEMPLATE_KINDS = WORKLOAD_KINDS | {"Job", "ReplicationController"}
CRONJOB = frozenset({"CronJob"})
POLICY = frozenset({"NetworkPolicy"})
AFFINITY_KINDS = frozenset({"Deployment", "StatefulSet"})
POD = ("spec", "template", "spec")
#: The label selectors of a pod spec that kustomize's commonLabels reach (lists on the way are
#: walked item by item).
POD_SELECTORS = (
    *(
        (
            "affinity",
            affinity,
            "preferredDuringSchedulingIgnoredDuringExecution",
            "podAffinityTerm",
            "labelSelector",
        )
        for affinity in ("podAffinity", "podAntiAffinity")
    ),
    *(
        ("affinity", affinity, "requiredDuringSchedulingIgnoredDuringExecution", "labelSelector")
        for affinity in ("podAffinity", "podAntiAffinity")
    ),
    ("topologySpreadConstraints", "labelSelector"),
)
#: Where kustomize puts label pairs besides ``metadata.labels`` (its commonLabels field specs,
#: for the paths the subset follows; checked with kubectl by tests/unit/kustomize/corpus):
#: the kinds, the path (a list on the way is walked item by item; the step before ``[]`` must
#: already be a list), whether a missing map is made, and whether the path is a selector
#: (commonLabels, ``includeSelectors``) or a template (those and ``includeTemplates``).
LABEL_FIELDS: tuple[tuple[frozenset[str], tuple[str, ...], bool, bool], ...] = (
    (frozenset({"Service", "ReplicationController"}), ("spec", "selector"), True, True),
    (WORKLOAD_KINDS, ("spec", "selector", "matchLabels"), True, True),
    (frozenset({"Job", "PodDisruptionBudget"}), ("spec", "selector", "matchLabels"), False, True),
    (CRONJOB, ("spec", "jobTemplate", "spec", "selector", "matchLabels"), False, True),
    (POLICY, ("spec", "podSelector", "matchLabels"), False, True),
    (POLICY, ("spec", "ingress", "from", "podSelector", "matchLabels"), False, True),
    (POLICY, ("spec", "egress", "to", "podSelector", "matchLabels"), False, True),
    *((AFFINITY_KINDS, (*POD, *path, "matchLabels"), False, True) for path in POD_SELECTORS),
    (TEMPLATE_KINDS, ("spec", "template", "metadata", "labels"), True, False),
    (CRONJOB, ("spec", "jobTemplate", "metadata", "labels"), True, False),
    (CRONJOB, ("spec", "jobTemplate", "spec", "template", "metadata", "labels"), True, False),
    (
        frozenset({"StatefulSet"}),
        ("spec", "volumeClaimTemplates", "[]", "metadata", "labels"),
        True,
        False,
    ),
)
#: Where kustomize puts commonAnnotations besides ``metadata.annotations``.
ANNOTATION_FIELDS: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
    (TEMPLATE_KINDS, ("spec", "template", "metadata", "annotations")),
    (CRONJOB, ("spec", "jobTemplate", "metadata", "annotations")),
    (CRONJOB, ("spec", "jobTemplate", "spec", "template", "metadata", "annotations")),
)
#: Built-in cluster-scoped kinds: the namespace transformer leaves them alone.
CLUSTER_KINDS = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "APIService",
        "IngressClass",
        "RuntimeClass",
        "CSIDriver",
        "Node",
    }
)
IMAGE_LISTS = ("containers", "initContainers")
#: Kinds whose ``subjects`` named ``default`` take the kustomization's namespace.
BINDING_KINDS = frozenset({"RoleBinding", "ClusterRoleBinding"})


def transform(kust: Kustomization, objects: list[Rendered]) -> None:
    """The kustomization's own transformers, in kustomize's order for the subset."""
    body = kust.data
    namespace = body.get("namespace")
    labels = [(dict(body.get("commonLabels") or {}), True, True)]
    labels += [
        (dict(e["pairs"]), bool(e.get("includeSelectors")), bool(e.get("includeTemplates")))
        for e in body.get("labels") or ()
    ]
    annotations = dict(body.get("commonAnnotations") or {})
    for r in objects:
        if namespace:
            _namespace(r.obj, namespace)
        for pairs, selectors, templates in labels:
            _labels(r.obj, pairs, selectors, templates)
        _annotations(r.obj, annotations)
        _images(kust, r)
    _replicas(kust, objects)


def _namespace(obj: dict[str, Any], namespace: str) -> None:
    """kustomize's namespace transformer: every namespaced object's namespace, a Namespace
    object's name, and the namespace of a role binding's subjects named ``default``."""
    kind = obj.get("kind")
    if kind not in CLUSTER_KINDS:
        obj["metadata"]["namespace"] = namespace
    if kind == "Namespace":
        obj["metadata"]["name"] = namespace
    if kind in BINDING_KINDS and isinstance(obj.get("subjects"), list):
        for subject in obj["subjects"]:
            if isinstance(subject, dict) and subject.get("name") == "default":
                subject["namespace"] = namespace


def namespace_effect(obj: dict[str, Any], namespace: str) -> str:
    """What a kustomization's ``namespace: <namespace>`` does to the cluster-scoped ``obj``
    when the folder is rendered ("" when it leaves it alone): renames a Namespace, sets the
    namespace of a kind kustomize does not know as cluster-scoped, or of a binding's subject
    named ``default``."""
    changed = copy.deepcopy(obj)
    changed.setdefault("metadata", {})
    _namespace(changed, namespace)
    if changed == obj:
        return ""
    meta, kind = obj.get("metadata") or {}, obj.get("kind")
    if changed["metadata"].get("name") != meta.get("name"):
        return f"renames the Namespace to {namespace}"
    if changed["metadata"].get("namespace") != meta.get("namespace"):
        return (
            f"sets its metadata.namespace to {namespace} (kustomize does not know {kind} as "
            "cluster-scoped)"
        )
    return f"sets the namespace of its subjects named default to {namespace}"


def _labels(obj: dict[str, Any], pairs: dict[str, Any], selectors: bool, templates: bool) -> None:
    if not pairs:
        return
    _stamp(obj, ("metadata", "labels"), pairs)
    kind = obj.get("kind")
    for kinds, path, create, selector in LABEL_FIELDS:
        if kind in kinds and (selectors or (templates and not selector)):
            _stamp(obj, path, pairs, create)


def _annotations(obj: dict[str, Any], pairs: dict[str, Any]) -> None:
    """commonAnnotations; and, as kustomize prints objects, no empty ``metadata.annotations``
    (kustomize keeps its own bookkeeping there and drops the map when it ends up empty)."""
    if pairs:
        _stamp(obj, ("metadata", "annotations"), pairs)
        for kinds, path in ANNOTATION_FIELDS:
            if obj.get("kind") in kinds:
                _stamp(obj, path, pairs)
    if obj["metadata"].get("annotations") == {}:
        del obj["metadata"]["annotations"]


def _replicas(kust: Kustomization, objects: list[Rendered]) -> None:
    """Each ``replicas`` entry on the workloads of its name; an entry that names none refuses
    the folder, as kustomize refuses the build."""
    for index, entry in enumerate(kust.data.get("replicas") or ()):
        found = False
        for r in objects:
            if r.obj.get("kind") in REPLICA_KINDS and r.obj["metadata"]["name"] == entry["name"]:
                r.obj.setdefault("spec", {})["replicas"] = entry["count"]
                r.replicas = (kust.file, index)
                found = True
        if not found:
            raise Unsupported(
                kust.file,
                "replicas entry",
                f"no {', '.join(sorted(REPLICA_KINDS))} named "
                f"{entry['name']!r}: kustomize refuses the build",
            )


def _images(kust: Kustomization, r: Rendered) -> None:
    for index, entry in enumerate(kust.data.get("images") or ()):
        for path, image in list(images_of(r.obj)):
            if split_image(image)[0] == entry["name"]:
                _set(r.obj, path, set_image(image, entry))
                r.images[path] = (kust.file, index)


def _stamp(node: Any, path: tuple[str, ...], pairs: dict[str, Any], create: bool = True) -> None:
    """Add ``pairs`` to the map at ``path``, as kustomize's field specs do: a list met on the
    way is walked item by item; a missing map is made when ``create`` (else the object is left
    alone); a step before ``[]`` must be a list already (it is never made)."""
    if isinstance(node, list):
        for item in node:
            if isinstance(item, dict):
                _stamp(item, path, pairs, create)
        return
    if not path:
        node.update({str(k): str(v) for k, v in pairs.items()})
        return
    step, rest = path[0], path[1:]
    child = node.get(step)
    if rest[:1] == ("[]",):
        if isinstance(child, list):
            _stamp(child, rest[1:], pairs, create)
    elif isinstance(child, dict | list):
        _stamp(child, rest, pairs, create)
    elif create:
        node[step] = {}
        _stamp(node[step], rest, pairs, create)


def images_of(obj: Any, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every container and init container image of an object, with its path."""
    if isinstance(obj, dict):
        for name, value in obj.items():
            if name in IMAGE_LISTS and isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, dict) and isinstance(item.get("image"), str):
                        yield (*path, name, i, "image"), item["image"]
            else:
                yield from images_of(value, (*path, name))
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from images_of(item, (*path, i))


def split_image(image: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference; a registry port is part of the name."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest


def set_image(image: str, entry: dict[str, Any]) -> str:
    """An image after an ``images`` entry: a new name, and a new tag or digest."""
    name, tag, digest = split_image(image)
    name = str(entry.get("newName") or name)
    if entry.get("digest"):
        return f"{name}@{entry['digest']}"
    if entry.get("newTag") is not None:
        return f"{name}:{entry['newTag']}"
    return name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def _set(obj: Any, path: Path, value: Any) -> None:
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value
