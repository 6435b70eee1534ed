"""``gitops-reverser convert``: the Go operator's manifests as ours (docs/migrating.md).

Reads multi-document YAML (or JSON) from files, folders or stdin; converts every object of
group ``configbutler.ai`` (any of its ``v1alpha*`` versions) to ``gitopsreverser.io/v1alpha1``
field by field (``services.cli.upstream_kinds``); passes every other document through
unchanged, so a folder of mixed manifests converts as a whole. Output is all or nothing: when
one field of one object has no equivalent, every such field is printed on stderr, nothing on
stdout, and the exit code is 6, so ``convert -f old/ | kubectl apply -f -`` never applies half.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from services.cli import upstream_kinds as kinds
from services.cli.errors import EXIT_CHECK_FAILED, EXIT_OK, CliError
from services.cli.upstream_fields import Fields, Refusal

OURS = "gitopsreverser.io/v1alpha1"
#: The metadata an object keeps; the rest (uid, resourceVersion, managedFields, owners, ...)
#: belongs to the cluster it was read from.
KEPT_METADATA = ("name", "namespace", "generateName", "labels", "annotations")
#: Annotations dropped: kubectl's bookkeeping and upstream's one-shot resync request.
DROPPED_ANNOTATION_PREFIXES = ("kubectl.kubernetes.io/", "reconcile.configbutler.ai/")
SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class Result:
    """What one conversion gives: the documents in input order, notes and refusals."""

    documents: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)


def is_upstream(doc: Any) -> bool:
    """An object of the Go operator's group (any version)."""
    if not isinstance(doc, dict):
        return False
    api = doc.get("apiVersion")
    return isinstance(api, str) and api.split("/")[0] == kinds.GROUP and "/" in api


def _metadata(meta: Any) -> dict[str, Any]:
    meta = meta if isinstance(meta, dict) else {}
    out = {k: meta[k] for k in KEPT_METADATA if meta.get(k) not in (None, {}, "")}
    notes = out.get("annotations")
    if isinstance(notes, dict):
        kept = {
            k: v for k, v in notes.items() if not str(k).startswith(DROPPED_ANNOTATION_PREFIXES)
        }
        if kept:
            out["annotations"] = kept
        else:
            out.pop("annotations")
    return out


def _label(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    name = meta.get("name", "?") if isinstance(meta, dict) else "?"
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return f"{doc.get('kind', '?')} {ns + '/' if ns else ''}{name}"


def _spec(doc: dict[str, Any], ctx: kinds.Context) -> dict[str, Any]:
    kind = doc.get("kind")
    raw = doc.get("metadata")
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    ns = str(meta.get("namespace") or "")
    name = str(meta.get("name") or "")
    spec = Fields(doc.get("spec"), "spec")
    if kind == "GitProvider":
        return kinds.git_provider(spec, ns, name, ctx)
    if kind == "GitTarget":
        return kinds.git_target(spec, ns, ctx)
    if kind == "WatchRule":  # without a namespace, a sourceNamespace cannot be shown its own
        return kinds.watch_rule(spec, ns)
    if kind == "ClusterWatchRule":
        return kinds.cluster_watch_rule(spec)
    if kind == "ClusterProvider":
        return kinds.cluster_provider(spec, ctx)
    if kind == "CommitRequest":
        return kinds.commit_request(spec)
    raise Refusal(
        "kind",
        f"{kind!r} of {kinds.GROUP} has no equivalent (ours has GitProvider, GitTarget, "
        "WatchRule, ClusterWatchRule, ClusterProvider, CommitRequest)",
    )


def convert_one(doc: dict[str, Any], ctx: kinds.Context) -> dict[str, Any]:
    """One upstream object as ours (status dropped: the product writes its own)."""
    return {
        "apiVersion": OURS,
        "kind": doc.get("kind"),
        "metadata": _metadata(doc.get("metadata")),
        "spec": _spec(doc, ctx),
    }


def convert(documents: Iterable[Any]) -> Result:
    """Every document converted (upstream) or kept (anything else), in order. GitProviders
    go first, so a GitTarget can take over its GitProvider's signing."""
    docs = list(documents)
    ctx = kinds.Context()
    out: list[Any] = list(docs)
    result = Result()
    order = sorted(range(len(docs)), key=lambda i: not _kind_is(docs[i], "GitProvider"))
    for i in order:
        doc = docs[i]
        if not is_upstream(doc):
            continue
        noted = len(ctx.notes)
        try:
            out[i] = convert_one(doc, ctx)
        except Refusal as refusal:
            result.refusals.append(f"{_label(doc)}: {refusal}")
        ctx.notes[noted:] = [f"{_label(doc)}: {note}" for note in ctx.notes[noted:]]
    for (ns, name), _ in sorted(ctx.signing.items()):
        if (ns, name) not in ctx.signing_used:
            result.refusals.append(
                f"GitProvider {ns}/{name}: spec.commit.signing: ours signs per GitTarget "
                "(spec.commit.signing); convert it together with the GitTargets that use it"
            )
    for (ns, name), _ in sorted(ctx.reconcile.items()):
        if (ns, name) not in ctx.reconcile_used:
            result.refusals.append(
                f"GitProvider {ns}/{name}: spec.commit.message.reconcileTemplate: ours has it "
                "per GitTarget; convert it together with the GitTargets that use it"
            )
    result.documents = out
    result.notes = ctx.notes
    return result


def _kind_is(doc: Any, kind: str) -> bool:
    return is_upstream(doc) and doc.get("kind") == kind


def _flatten(doc: Any) -> Iterator[Any]:
    """A ``List`` (``kubectl get -o yaml`` of several objects) as its items."""
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        yield from doc["items"]
    elif doc is not None:
        yield doc


def parse(text: str, source: str) -> list[Any]:
    """The documents of one file or stream (JSON is YAML)."""
    try:
        return [item for doc in yaml.safe_load_all(text) for item in _flatten(doc)]
    except yaml.YAMLError as err:
        raise CliError(f"{source}: not YAML: {err}".splitlines()[0]) from err


def read(sources: list[str], stdin: TextIO) -> list[Any]:
    """The documents of ``sources`` in order: files, folders (their ``*.yaml``, ``*.yml``,
    ``*.json``, sorted, not recursive, as ``kubectl apply -f DIR``), ``-`` for stdin (also
    when no source is given)."""
    docs: list[Any] = []
    for source in sources or ["-"]:
        if source == "-":
            docs += parse(stdin.read(), "stdin")
            continue
        path = Path(source)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file())
        elif path.is_file():
            files = [path]
        else:
            raise CliError(f"{source}: no such file or directory")
        for file in files:
            docs += parse(file.read_text(), str(file))
    return docs


def write(documents: list[Any], fmt: str, out: TextIO) -> None:
    """YAML documents separated by ``---`` (the default), or JSON: one object, or a ``List``
    of several, as kubectl prints them."""
    if fmt == "json":
        body: Any = (
            documents[0]
            if len(documents) == 1
            else {"apiVersion": "v1", "kind": "List", "items": documents}
        )
        out.write(json.dumps(body, indent=2) + "\n")
        return
    out.write(yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False))


def run(sources: list[str], fmt: str, stdin: TextIO | None = None) -> int:
    """The command: print the converted documents, or every refusal and exit 6."""
    result = convert(read(sources, stdin or sys.stdin))
    for note in result.notes:
        sys.stderr.write(f"note: {note}\n")
    if result.refusals:
        for refusal in result.refusals:
            sys.stderr.write(f"error: {refusal}\n")
        sys.stderr.write(
            f"error: {len(result.refusals)} field(s) with no equivalent; nothing printed "
            "(docs/migrating.md)\n"
        )
        return EXIT_CHECK_FAILED
    write(result.documents, fmt, sys.stdout)
    return EXIT_OK
