"""``gitops-reverser trace KIND/NAME -n NS``: one object from its API edit to the applied revision.

One record: the object (and whether it is in the cluster now, with its labels); each GitTarget
whose rules name its type (a WatchRule of its namespace, or a ClusterWatchRule for a
cluster-scoped object), and whether a rule's ``objectSelector`` selects it there (``mirrored``:
false names the rules whose selectors exclude it; null when the object is not in the cluster,
so its labels are not known, and only rules with a selector name its type); the file that holds
it in Git, found by identity wherever it is in the folder as the writer finds it (M4), or where
the writer would put it; the last commit that wrote that file and its author (``git log`` on a
fresh fetch of the branch); and the newest apply request whose commit holds that commit, with
its outcome (the ledger of the GitTarget, in Redis).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.branch_worker.folder import Folder
from services.cli.context import Context
from services.cli.errors import CliError, NotFoundError
from services.cli.output import emit
from shared.decide.path_templates import new_file
from shared.decide.placement import PlacementRefused, canonical_path
from shared.decide.resolution import resolve_rule
from shared.decide.selectors import selector_matches
from shared.git.credentials import resolved_once
from shared.git.workspace import CommitInfo, Workspace
from shared.kube.crds import CrdReader
from shared.kube.discovery import Discovery
from shared.kube.errors import NotFound
from shared.kube.kinds import CLUSTER_WATCH_RULES, GIT_PROVIDERS, GIT_TARGETS, WATCH_RULES
from shared.model.crd_meta import LabelSelector
from shared.model.crds import parse_cluster_watch_rule, parse_watch_rule
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.ledger import LastRequest
from shared.model.placement import parse_placement
from shared.model.resources import ApiResource, Catalog


def resolve_kind(catalog: Catalog, text: str) -> ApiResource:
    """``configmap``, ``ConfigMap``, ``configmaps`` or ``deployments.apps``, as kubectl reads
    them (the group's preferred version)."""
    name, _, group = text.lower().partition(".")
    found = [
        r
        for r in catalog.resources
        if (not group or r.group == group)
        and name in (r.resource, r.kind.lower())
        and "/" not in r.resource
        and r.version == catalog.preferred_version(r.group)
    ]
    if not found:
        raise NotFoundError(f'the server does not serve a resource type "{text}"')
    return found[0]


@dataclass(frozen=True, slots=True)
class Selecting:
    """One rule entry whose types include the object's: where it is, and its objectSelector
    (None: every object of its types)."""

    rule: str
    target: tuple[str, str]
    selector: LabelSelector | None

    def verdict(self, labels: Mapping[str, str] | None) -> bool | None:
        """Whether it selects an object with ``labels`` (None: the labels are not known)."""
        if self.selector is None:
            return True
        return None if labels is None else selector_matches(self.selector, labels)

    def shown(self, labels: Mapping[str, str] | None) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "objectSelector": None if self.selector is None else selector_text(self.selector),
            "selects": self.verdict(labels),
        }


def selector_text(selector: LabelSelector) -> str:
    """A label selector as kubectl's ``-l`` writes it (``""``: every object)."""
    parts = [f"{k}={v}" for k, v in selector.match_labels]
    for req in selector.match_expressions:
        values = ",".join(req.values)
        parts.append(
            {
                "In": f"{req.key} in ({values})",
                "NotIn": f"{req.key} notin ({values})",
                "Exists": req.key,
                "DoesNotExist": f"!{req.key}",
            }.get(req.operator, f"{req.key} {req.operator} ({values})")
        )
    return ",".join(parts)


def _selecting(ctx: Context, res: ApiResource, catalog: Catalog, namespace: str) -> list[Selecting]:
    """Every rule entry whose types include ``res``, with the GitTarget its rule names."""
    key = (res.group, res.resource)
    chosen: list[Selecting] = []
    if res.namespaced:
        for raw in ctx.kube.list(WATCH_RULES, namespace).items:
            rule = parse_watch_rule(raw)
            for i, entry in enumerate(rule.rules):
                resolved = resolve_rule(entry, catalog).resources
                if any((r.group, r.resource) == key for r in resolved):
                    where = f"WatchRule {namespace}/{rule.meta.name} rules[{i}]"
                    chosen.append(Selecting(where, (namespace, rule.target), entry.fields.selector))
    else:
        for raw in ctx.kube.list(CLUSTER_WATCH_RULES).items:
            crule = parse_cluster_watch_rule(raw)
            for i, entry in enumerate(crule.rules):
                resolved = resolve_rule(entry, catalog, namespaced=False).resources
                if any((r.group, r.resource) == key for r in resolved):
                    where = f"ClusterWatchRule {crule.meta.name} rules[{i}]"
                    target = (crule.target_namespace, crule.target)
                    chosen.append(Selecting(where, target, entry.fields.selector))
    return sorted(chosen, key=lambda c: (c.target, c.rule))


def _mirrored(rules: list[Selecting], labels: Mapping[str, str] | None) -> bool | None:
    """Whether any of one GitTarget's rules selects the object (None: its labels are not
    known and only selecting rules would say)."""
    verdicts = [r.verdict(labels) for r in rules]
    if any(v is True for v in verdicts):
        return True
    return None if None in verdicts else False


def _commit(info: CommitInfo | None) -> dict[str, Any] | None:
    if info is None:
        return None
    return {
        "sha": info.sha,
        "author": f"{info.author_name} <{info.author_email}>",
        "at": datetime.fromtimestamp(info.committed_at, UTC).isoformat(),
        "subject": info.subject,
    }


def _request(request: LastRequest) -> dict[str, Any]:
    return {
        "token": request.token,
        "commit": request.commit,
        "reasons": list(request.reasons),
        "outcome": request.outcome,
        "message": request.message,
        "finishedAt": datetime.fromtimestamp(request.finished_at, UTC).isoformat(),
    }


def _new_path(spec: dict[str, Any], oid: ObjectId) -> str:
    """Where the object's file would go: its GitTarget's placement (issue 27), with no label
    known here (a template that needs one gives the built-in layout's path)."""
    folder = str(spec.get("path", ""))
    try:
        return new_file(folder, parse_placement(spec), oid, {})
    except PlacementRefused:
        return canonical_path(folder, oid)


def _in_git(ctx: Context, target: dict[str, Any], oid: ObjectId, workdir: Path) -> dict[str, Any]:
    """The object's file on the GitTarget's branch, its last commit, and the apply request
    that covered that commit."""
    ns, spec = target["metadata"]["namespace"], target.get("spec") or {}
    provider_name = (spec.get("providerRef") or {}).get("name", "")
    try:
        provider = ctx.kube.get(GIT_PROVIDERS, ns, provider_name)
    except NotFound as err:
        raise NotFoundError(f"GitProvider {ns}/{provider_name} not found") from err
    url, branch = provider["spec"]["url"], spec.get("branch", "")
    secret = ((provider.get("spec") or {}).get("secretRef") or {}).get("name")
    with resolved_once(CrdReader(ctx.kube).secret_data, ns, secret) as env:
        ws = Workspace(workdir, url, branch, env=env)
        tip = ws.fetch()
        ws.reset(tip)
    folder = Folder(ws, str(spec.get("path", "")))
    located = folder.find((oid.group, oid.kind, oid.namespace, oid.name))
    path = located.path if located else _new_path(spec, oid)
    last = ws.last_commit(path) if located else None
    found: dict[str, Any] = {
        "repository": url,
        "branch": branch,
        "tip": tip,
        "file": path,
        "inGit": located is not None,
        "lastCommit": _commit(last),
        "lastApplyRequest": None,
    }
    stores = ctx.optional_stores() if last is not None else None
    if last is not None and stores is not None:
        uid = GitTargetUid(str(target["metadata"]["uid"]))
        recent = stores.ledger.recent(uid)
        covering = [r for r in recent if r.commit and ws.contains(last.sha, r.commit)]
        found["lastApplyRequest"] = _request(covering[0]) if covering else None
    return found


def trace(ctx: Context, what: str) -> int:
    """Print the trace record of ``KIND/NAME``."""
    kind, _, name = what.partition("/")
    if not kind or not name:
        raise CliError(f"expected KIND/NAME, got {what!r}")
    catalog = Discovery(ctx.kube, time.time).catalog()
    res = resolve_kind(catalog, kind)
    namespace = ctx.ns() if res.namespaced else ""
    try:
        obj = ctx.kube.get(res, namespace, name)
        in_cluster: dict[str, Any] | None = {
            "uid": obj["metadata"].get("uid"),
            "resourceVersion": obj["metadata"].get("resourceVersion"),
        }
    except NotFound:
        obj, in_cluster = {}, None
    oid = ObjectId(res.group, res.version, res.resource, res.kind, namespace, name)
    rules = _selecting(ctx, res, catalog, namespace or ctx.ns())
    if not rules:
        where = f"namespace {namespace}" if namespace else "any ClusterWatchRule"
        raise NotFoundError(f"no GitTarget mirrors {res.resource} of {where}")
    labels = _labels(obj) if in_cluster is not None else None
    record: dict[str, Any] = {
        "object": {"kind": res.kind, "apiVersion": res.api_version}
        | {"namespace": namespace, "name": name, "inCluster": in_cluster, "labels": labels},
        "gitTargets": [],
    }
    for target_ns, target_name in sorted({r.target for r in rules}):
        try:
            target = ctx.kube.get(GIT_TARGETS, target_ns, target_name)
        except NotFound:
            continue  # a rule naming a GitTarget that does not exist mirrors nothing
        its = [r for r in rules if r.target == (target_ns, target_name)]
        entry = {
            "namespace": target_ns,
            "name": target_name,
            "mirrored": _mirrored(its, labels),
            "rules": [r.shown(labels) for r in its],
        }
        with tempfile.TemporaryDirectory(prefix="gitops-reverser-trace-") as work:
            record["gitTargets"].append(entry | _in_git(ctx, target, oid, Path(work)))
    if not record["gitTargets"]:
        raise NotFoundError(
            f"the GitTargets the rules name do not exist: {sorted({r.target for r in rules})}"
        )
    emit(record, ctx.output, text=text_of(record))
    return 0


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _selection_line(target: dict[str, Any]) -> str:
    """Whether the GitTarget's rules select the object, and which rule says so."""
    rules = target["rules"]
    if target["mirrored"] is True:
        rule = next(r for r in rules if r["selects"])
        how = f" (objectSelector {rule['objectSelector']!r})" if rule["objectSelector"] else ""
        return f"Mirrored:      yes, by {rule['rule']}{how}"
    shown = "; ".join(f"{r['rule']}: {r['objectSelector']!r}" for r in rules)
    if target["mirrored"] is None:
        return f"Mirrored:      unknown: the object is not in the cluster to match ({shown})"
    return f"Mirrored:      no: its labels match no objectSelector ({shown})"


def text_of(record: dict[str, Any]) -> str:
    """The record as lines a person reads (``flux trace``'s layout)."""
    o = record["object"]
    where = f"{o['namespace']}/{o['name']}" if o["namespace"] else o["name"]
    lines = [f"Object:        {o['kind']} {where}" + ("" if o["inCluster"] else " (deleted)")]
    for t in record["gitTargets"]:
        lines += [
            "---",
            f"GitTarget:     {t['namespace']}/{t['name']}",
            _selection_line(t),
            f"Repository:    {t['repository']} {t['branch']} @ {(t['tip'] or '-')[:12]}",
            f"File:          {t['file']}" + ("" if t["inGit"] else " (not in Git)"),
        ]
        c = t["lastCommit"]
        if c:
            lines += [
                f"Last commit:   {c['sha'][:12]} {c['subject']}",
                f"Author:        {c['author']} at {c['at']}",
            ]
        r = t["lastApplyRequest"]
        if r:
            lines.append(
                f"Applied:       {r['outcome']} ({'+'.join(r['reasons'])} at {r['commit'][:12]},"
                f" {r['finishedAt']}){': ' + r['message'] if r['message'] else ''}"
            )
        elif c:
            lines.append("Applied:       no apply request has covered this commit yet")
    return "\n".join(lines)
