"""The resource types the product itself reads and writes, known without discovery.

Our four CRDs (group ``gitopsreverser.io``, version ``v1alpha1``, as the chart defines them)
and the built-in kinds the watcher needs (Namespace for admission, Secret for credentials and
kubeconfigs, Event for what it tells people, SelfSubjectAccessReview to ask what it may do),
and the Argo CD Application (the Flux kinds are in ``shared.kube.flux``). Watched types, by
contrast, always come from discovery.
"""

from __future__ import annotations

from shared.model.resources import ApiResource, SensitiveKind, sensitive_kind

GROUP = "gitopsreverser.io"
VERSION = "v1alpha1"
_CRUD = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})

GIT_PROVIDERS = ApiResource(GROUP, VERSION, "gitproviders", "GitProvider", True, _CRUD)
GIT_TARGETS = ApiResource(GROUP, VERSION, "gittargets", "GitTarget", True, _CRUD)
WATCH_RULES = ApiResource(GROUP, VERSION, "watchrules", "WatchRule", True, _CRUD)
CLUSTER_PROVIDERS = ApiResource(GROUP, VERSION, "clusterproviders", "ClusterProvider", False, _CRUD)
CLUSTER_WATCH_RULES = ApiResource(
    GROUP, VERSION, "clusterwatchrules", "ClusterWatchRule", False, _CRUD
)
COMMIT_REQUESTS = ApiResource(GROUP, VERSION, "commitrequests", "CommitRequest", True, _CRUD)

NAMESPACES = ApiResource("", "v1", "namespaces", "Namespace", False, _CRUD)
SECRETS = ApiResource("", "v1", "secrets", "Secret", True, _CRUD)
#: Read by name only: a GitProvider's spec.knownHostsRef (its SSH known hosts).
CONFIG_MAPS = ApiResource("", "v1", "configmaps", "ConfigMap", True, _CRUD)
EVENTS = ApiResource("", "v1", "events", "Event", True, _CRUD)
SELF_SUBJECT_ACCESS_REVIEWS = ApiResource(
    "authorization.k8s.io",
    "v1",
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    False,
    frozenset({"create"}),
)
#: The Argo CD applier (argoproj.io/v1alpha1; no status subresource, appliers.md A1).
APPLICATIONS = ApiResource(
    "argoproj.io",
    "v1alpha1",
    "applications",
    "Application",
    True,
    frozenset({"get", "update"}),
)


def is_sensitive(resource: ApiResource, extra: tuple[SensitiveKind, ...] = ()) -> bool:
    """Objects whose payload must never leave the cluster in plain text (M10): core Secrets,
    any kind named ``Secret``, and the GitTarget's ``spec.sensitive`` kinds (``extra``)."""
    if resource.group == "" and resource.resource == "secrets":
        return True
    return sensitive_kind(resource.group, resource.kind, extra)
