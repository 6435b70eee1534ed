"""What a person asks of one GitTarget: suspend, resume, reconcile, commit.

- ``suspend``/``resume`` set ``spec.suspend``. A cluster whose GitTarget CRD has no such field
  (CRDs older than the field) would prune it silently, so the installed CRD's schema is read
  first and the command refuses (``EXIT_UNSUPPORTED``) without changing anything.
- ``reconcile`` sets the ``reconcile.gitopsreverser.io/requestedAt`` annotation to a fresh
  value, as ``flux reconcile`` sets ``reconcile.fluxcd.io/requestedAt``; ``--wait`` watches
  the GitTarget until ``status.lastHandledReconcileAt`` equals that value.
- ``commit`` creates a CommitRequest for the GitTarget; ``--wait`` watches it until its Ready
  condition has a final reason, and prints the commit's sha.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from services.cli.context import Context
from services.cli.errors import EXIT_ERROR, EXIT_OK, NotFoundError, Unsupported
from services.cli.output import emit
from services.cli.waiting import wait_for
from shared.kube.api import Obj
from shared.kube.errors import NotFound
from shared.kube.kinds import COMMIT_REQUESTS, GIT_TARGETS, GROUP, VERSION
from shared.model.commit_requests import BENIGN, FINAL
from shared.model.resources import ApiResource

CRDS = ApiResource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    False,
    frozenset({"get", "list"}),
)
GIT_TARGET_CRD = f"gittargets.{GROUP}"
RECONCILE_ANNOTATION = "reconcile.gitopsreverser.io/requestedAt"
HANDLED_FIELD = "lastHandledReconcileAt"
#: ``--timeout`` default: a watcher pass is ``reconcile_period`` (10 s by default) away at most.
DEFAULT_TIMEOUT_S = 60.0


def crd_spec_fields(ctx: Context, name: str = GIT_TARGET_CRD) -> set[str]:
    """The fields the installed CRD's ``v1alpha1`` schema allows under ``spec``."""
    try:
        crd = ctx.kube.get(CRDS, "", name)
    except NotFound as err:
        raise NotFoundError(f"CRD {name} is not installed") from err
    for version in (crd.get("spec") or {}).get("versions") or []:
        if version.get("name") == VERSION:
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            spec = (schema.get("properties") or {}).get("spec") or {}
            return set((spec.get("properties") or {}).keys())
    raise Unsupported(f"CRD {name} serves no {VERSION}")


def _target(ctx: Context, name: str) -> Obj:
    try:
        return ctx.kube.get(GIT_TARGETS, ctx.ns(), name)
    except NotFound as err:
        raise NotFoundError(f'GitTarget "{name}" not found in namespace {ctx.ns()}') from err


def suspend(ctx: Context, name: str, value: bool) -> int:
    """Set ``spec.suspend`` (``value``) after checking the installed CRD has the field."""
    _target(ctx, name)
    if "suspend" not in crd_spec_fields(ctx):
        raise Unsupported(
            f"the installed GitTarget CRD has no spec.suspend: nothing was changed. Upgrade the "
            f"CRDs (kubectl apply --server-side -f crds/, docs/install.md) to "
            f"{'suspend' if value else 'resume'} GitTargets"
        )
    ctx.kube.patch(GIT_TARGETS, ctx.ns(), name, {"spec": {"suspend": value}})
    verb = "suspended" if value else "resumed"
    emit(
        {"namespace": ctx.ns(), "name": name, "suspend": value},
        ctx.output,
        text=f"gittarget.{GROUP}/{name} {verb}",
    )
    return EXIT_OK


def request_value(moment: datetime) -> str:
    """A fresh ``requestedAt``: the time, to the microsecond, in RFC 3339 (Flux's form)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def reconcile(ctx: Context, name: str, wait: bool, timeout_s: float) -> int:
    """Ask for a resync; with ``wait``, until the watcher says it handled this request."""
    _target(ctx, name)
    value = request_value(ctx.clock())
    patch = {"metadata": {"annotations": {RECONCILE_ANNOTATION: value}}}
    ctx.kube.patch(GIT_TARGETS, ctx.ns(), name, patch)
    record: dict[str, Any] = {"namespace": ctx.ns(), "name": name, "requestedAt": value}
    lines = [f"gittarget.{GROUP}/{name} annotated: {RECONCILE_ANNOTATION}={value}"]
    if wait:

        def handled(obj: Obj) -> bool | None:
            return True if (obj.get("status") or {}).get(HANDLED_FIELD) == value else None

        wait_for(
            ctx.kube,
            GIT_TARGETS,
            ctx.ns(),
            name,
            done=handled,
            timeout_s=timeout_s,
            what=f"status.{HANDLED_FIELD} of GitTarget {ctx.ns()}/{name} to be {value} (is the "
            "watcher running, and new enough to handle the annotation?)",
        )
        record["handled"] = True
        lines.append(f"gittarget.{GROUP}/{name} reconciled")
    emit(record, ctx.output, text="\n".join(lines))
    return EXIT_OK


def _final(obj: Obj) -> dict[str, Any] | None:
    status = obj.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("reason") in FINAL:
            return {
                "reason": cond.get("reason"),
                "message": cond.get("message", ""),
                "sha": status.get("sha") or None,
            }
    return None


def commit(ctx: Context, name: str, message: str | None, wait: bool, timeout_s: float) -> int:
    """Create a CommitRequest for the GitTarget; with ``wait``, print its commit's sha."""
    _target(ctx, name)
    spec: dict[str, Any] = {"targetRef": {"name": name}}
    if message:
        spec["message"] = message
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CommitRequest",
        "metadata": {"generateName": f"{name}-", "namespace": ctx.ns()},
        "spec": spec,
    }
    created = ctx.kube.create(COMMIT_REQUESTS, ctx.ns(), body)
    request = str(created["metadata"]["name"])
    record: dict[str, Any] = {"namespace": ctx.ns(), "name": request, "target": name}
    if not wait:
        emit(record, ctx.output, text=f"commitrequest.{GROUP}/{request} created")
        return EXIT_OK
    final = wait_for(
        ctx.kube,
        COMMIT_REQUESTS,
        ctx.ns(),
        request,
        done=_final,
        timeout_s=timeout_s,
        what=f"CommitRequest {ctx.ns()}/{request} to finish",
    )
    record |= final
    text = final["sha"] or f"no commit: {final['reason']}: {final['message']}"
    emit(record, ctx.output, text=text)
    return EXIT_OK if final["reason"] in BENIGN else EXIT_ERROR
