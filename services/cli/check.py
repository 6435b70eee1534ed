"""``gitops-reverser check [--pre]``: can this cluster run the product, and does it?

- the product's CRDs are installed, and the versions each serves (storage marked);
- Flux's and Argo CD's CRDs, present or not (an applier needs one of them, or a webhook);
- the grants the product's processes need, asked with SelfSubjectAccessReviews as the
  kubeconfig's identity: run it with the product's own kubeconfig (its ServiceAccount's
  token) to check the product's grants, as ``kubectl auth can-i`` does for a person;
- the install's Redis answers (found in the cluster, or ``--redis-url``). With ``--pre``, an
  install not found yet is a note, not a failure.

Every check is printed; the exit code is ``EXIT_CHECK_FAILED`` when any failed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from services.cli.context import Context
from services.cli.errors import EXIT_CHECK_FAILED, EXIT_OK, CliError
from services.cli.install import InstallNotFound
from services.cli.output import emit
from services.cli.targets import CRDS
from shared.kube.errors import KubeError, NotFound
from shared.kube.kinds import (
    CLUSTER_PROVIDERS,
    CLUSTER_WATCH_RULES,
    COMMIT_REQUESTS,
    GIT_PROVIDERS,
    GIT_TARGETS,
    GROUP,
    WATCH_RULES,
)

OWN_CRDS = tuple(
    f"{r.resource}.{GROUP}"
    for r in (
        GIT_PROVIDERS,
        GIT_TARGETS,
        WATCH_RULES,
        CLUSTER_PROVIDERS,
        CLUSTER_WATCH_RULES,
        COMMIT_REQUESTS,
    )
)
APPLIER_CRDS = {
    "Flux": (
        "gitrepositories.source.toolkit.fluxcd.io",
        "kustomizations.kustomize.toolkit.fluxcd.io",
    ),
    "Argo CD": ("applications.argoproj.io",),
}
#: The cluster-wide grants of the chart's ClusterRoles (templates/rbac.yaml), by process:
#: (verb, API group, resource). tests/integration/cli keeps this list inside the rendered
#: chart's rules, so a grant the chart drops cannot stay here unnoticed.
PRODUCT_GRANTS: tuple[tuple[str, str, str, str], ...] = (
    *(("watcher", "list", GROUP, r) for r in ("gitproviders", "gittargets", "watchrules")),
    *(("watcher", "list", GROUP, r) for r in ("clusterproviders", "clusterwatchrules")),
    ("watcher", "patch", GROUP, "gittargets/status"),
    ("watcher", "patch", GROUP, "gitproviders/status"),
    ("watcher", "list", GROUP, "commitrequests"),
    ("watcher", "patch", GROUP, "commitrequests/status"),
    ("watcher", "list", "", "namespaces"),
    ("watcher", "get", "", "secrets"),
    ("watcher", "create", "", "events"),
    ("branch-worker", "get", "", "secrets"),
    ("branch-worker", "list", GROUP, "clusterproviders"),
    ("dispatcher", "list", GROUP, "gittargets"),
    ("dispatcher", "get", "", "secrets"),
    ("dispatcher", "create", "", "events"),
)


def _crd(ctx: Context, name: str) -> dict[str, Any] | None:
    try:
        return ctx.kube.get(CRDS, "", name)
    except NotFound:
        return None


def _versions(crd: dict[str, Any]) -> str:
    served = [
        v["name"] + (" (storage)" if v.get("storage") else "")
        for v in (crd.get("spec") or {}).get("versions") or []
        if v.get("served")
    ]
    return ", ".join(served)


def _crd_checks(ctx: Context) -> list[dict[str, Any]]:
    found = []
    for name in OWN_CRDS:
        crd = _crd(ctx, name)
        detail = f"serves {_versions(crd)}" if crd else "not installed (kubectl apply -f crds/)"
        found.append({"check": f"CRD {name}", "ok": crd is not None, "detail": detail})
    for applier, names in APPLIER_CRDS.items():
        missing = [n for n in names if _crd(ctx, n) is None]
        detail = "installed" if not missing else f"not installed ({', '.join(missing)})"
        found.append({"check": f"{applier} CRDs", "ok": True, "detail": detail})
    return found


def _grant_checks(ctx: Context) -> list[dict[str, Any]]:
    found = []
    for component, verb, group, resource in PRODUCT_GRANTS:
        allowed = ctx.kube.ssar(verb, group, resource, "")
        what = f"{verb} {resource}{'.' + group if group else ''}"
        found.append(
            {
                "check": f"grant of the {component}: {what}",
                "ok": allowed,
                "detail": "allowed" if allowed else "not allowed to this kubeconfig's identity",
            }
        )
    return found


def _redis_check(ctx: Context, pre: bool) -> dict[str, Any]:
    try:
        url = ctx.settings().redis_url
    except InstallNotFound as err:
        return {"check": "Redis", "ok": pre, "detail": str(err)}
    except (CliError, KubeError) as err:
        return {"check": "Redis", "ok": False, "detail": str(err)}
    problem = ctx.redis_problem()
    host = urlsplit(url).netloc.rpartition("@")[2]  # never the password
    return {"check": "Redis", "ok": problem is None, "detail": problem or f"answers at {host}"}


def check(ctx: Context, pre: bool) -> int:
    """Run every check, print each, and exit with whether all passed."""
    results = [*_crd_checks(ctx), *_grant_checks(ctx), _redis_check(ctx, pre)]
    lines = [f"{'✔' if r['ok'] else '✗'} {r['check']}: {r['detail']}" for r in results]
    failed = [r for r in results if not r["ok"]]
    lines.append(f"{len(failed)} check(s) failed" if failed else "all checks passed")
    emit({"items": results}, ctx.output, text="\n".join(lines))
    return EXIT_CHECK_FAILED if failed else EXIT_OK
