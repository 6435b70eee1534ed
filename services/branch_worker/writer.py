"""One object event applied to the work tree: a write, no write (M3), or a refusal (M10).

The API value wins (M5): the document says exactly what the sanitised object says. A document
already in the folder is edited where it lives, in place when a person wrote the file (P1:
comments and style kept, ``shared.model.roundtrip``); a new one goes to the canonical path,
with the bootstrap files when it is the folder's first (P4). Deletes follow the GitTarget's
prune mode (M9). A folder holding a kustomization is written through the kustomize subset
(P2): its files and kustomizations are planned together, and the write is made only when the
folder, rendered again, shows exactly the edit and nothing else moved. A Secret arrives sealed
when its GitTarget encrypts (P3): it is written as it came (ciphertext; a new one to
``{name}.sops.yaml``), and it is no write when the document in Git carries the same plaintext
fingerprint (M3: every sealing differs in bytes, so bytes cannot say "unchanged"). Fields a
rule's ``ignoreDifferences`` names keep Git's value (``kept_values``).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import Any, Literal

from services.branch_worker.folder import Folder, IdentityKey, Located, identity
from services.branch_worker.kept_values import with_git_values
from services.branch_worker.kustomize_root import ensure_root, renamed_by_namespace
from services.branch_worker.placing import Unplaced, path_for, place
from services.branch_worker.render_gate import (
    Gate,
    RenderContext,
    kept_variables,
    rendered_check,
    renders_as,
)
from services.branch_worker.sops_bootstrap import stage_sops_bootstrap
from shared import kustomize
from shared.decide.bootstrap import BOOTSTRAP_FILES
from shared.decide.placement import PlacementRefused, inside
from shared.git.errors import PathEscapes
from shared.git.workspace import Workspace
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.model.manifest import parse, render
from shared.model.render_fidelity import Mismatch
from shared.model.roundtrip import edit_file
from shared.model.sops import is_sealed, stored_fingerprint

Kind = Literal["write", "none", "refused"]


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying one event did."""

    kind: Kind
    path: str = ""
    reason: str = ""
    message: str = ""
    #: For a write: the documents the file now holds (none when it was deleted).
    documents: tuple[dict[str, Any], ...] = ()
    #: For a write rendered whole (not edited in place, P1): the bytes written.
    rendered: bytes | None = None
    #: For a write edited in place (P1): the bytes written.
    edited: bytes | None = None


NO_WRITE = Applied("none")

#: How far back ``only_in_history`` looks: the last this many commits that changed the
#: object's file. An applier applies the commit it was asked for or a newer one, so the older
#: content it can write is a few pushes old at most.
HISTORY_DEPTH = 16
#: ... among the branch's last this many commits: the walk is bounded even for a file that
#: rarely changes (or an object whose file never held its content: an applier that renders
#: what it applies, Flux's ``postBuild`` substitution, say), where ``git log`` would otherwise
#: walk the whole history for every such event in a window.
HISTORY_COMMITS = 512


def key_of(event: ObjectEvent) -> IdentityKey:
    """The identity key of the event's object."""
    oid = event.object_id
    return (oid.group, oid.kind, oid.namespace, oid.name)


def apply_event(
    workspace: Workspace,
    target: TargetConfig,
    event: ObjectEvent,
    folder: Folder | None = None,
    render: RenderContext = None,
) -> Applied:
    """Apply ``event`` to the work tree under ``target.path`` (``folder``: its current index;
    ``render``: the applier's postBuild substitutions, when it has any: the write is made only
    where their render of it is the live object, ``render_gate``)."""
    oid = event.object_id
    unwritten = _sensitive(target, event)
    if unwritten is not None:
        return unwritten
    folder = folder or Folder(workspace, target.path)
    verdict = folder.verdict
    if not verdict.accepted:
        return Applied(
            "refused",
            reason=verdict.reason,
            message=verdict.detail or f"{verdict.offending} is not managed by gitops-reverser",
        )
    event, unsupported = _prepare(workspace, target, event, folder)
    if unsupported is not None:
        return unsupported
    located = folder.find(key_of(event))
    first = not folder.holds_objects
    gate = Gate.of(render, event)
    try:
        if folder.tree is not None:
            applied = _through_kustomize(workspace, target, event, folder, gate)
        elif event.operation == "DELETE" or event.body is None:
            applied = _delete(workspace, target, located, folder)
        else:
            applied = _upsert(workspace, target, event, located, folder, gate=gate)
    except PathEscapes as err:  # the folder's check is the rule; this is the last defence
        return Applied("refused", reason="PathOutsideTarget", message=str(err))
    except OSError as err:
        if err.errno != errno.ENAMETOOLONG:
            raise  # a full disk, say: the branch tries again later
        # T4: a spec.path segment longer than a file name may be (names are shortened, C2)
        return Applied(
            "refused",
            reason="PathNotWritable",
            message=f"{err.strerror}: the path of {oid.kind} {oid.name} under {target.path!r}",
        )
    if applied.kind == "write" and folder.tree is None:
        folder.record(applied.path, list(applied.documents), applied.rendered, applied.edited)
        if first and applied.documents:
            _bootstrap(workspace, target)
    return applied


def _sensitive(target: TargetConfig, event: ObjectEvent) -> Applied | None:
    """M10: a sensitive object that is not sealed is never written (None: go on)."""
    oid = event.object_id
    sealed = event.sensitive and bool(target.recipients)
    if event.sensitive and event.body is not None and not is_sealed(event.body):
        sealed = False  # not a Secret (sops encrypts data only), or sealed by nobody
    if event.sensitive and event.operation == "DELETE" and not sealed:
        return NO_WRITE  # it was never written; its refusal is lifted by the caller
    if event.sensitive and not sealed:
        label = f"{oid.kind} {oid.namespace}/{oid.name}".replace(" /", " ")
        return Applied(
            "refused",
            reason="SensitiveResource",
            message=f"{label} is sensitive and is never written to Git",
        )
    return None


def _prepare(
    workspace: Workspace, target: TargetConfig, event: ObjectEvent, folder: Folder
) -> tuple[ObjectEvent, Applied | None]:
    """Issue 27: the event with Git's values of its ignored fields, and (useKustomize) the
    root kustomization before a write; a refusal when the folder cannot be rendered with it."""
    event = with_git_values(event, folder)
    if event.body is None or event.operation == "DELETE":
        return event, None
    unsupported = ensure_root(workspace, target, folder)
    if not unsupported:
        return event, None
    return event, Applied("refused", reason="UnsupportedContent", message=unsupported)


def held_as_is(event: ObjectEvent, folder: Folder, render: RenderContext = None) -> bool:
    """W2: whether the work tree (the tip with the pending writes) already holds the event's
    object as it came, so mirroring it makes no write (M3) and it reverts nothing Git holds:
    the document equals it (or carries the same plaintext, P3), or, in a kustomize folder, the
    render does. False for a DELETE and for an object the folder does not hold."""
    event = with_git_values(event, folder)  # the event the writer writes (and gates)
    body = event.body
    if event.operation == "DELETE" or body is None:
        return False
    if folder.tree is not None:
        found = folder.tree.find(key_of(event))
        return found is not None and (found.obj == body or renders_as(found.obj, event, render))
    located = folder.find(key_of(event))
    if located is None:
        return False
    held = located.documents[located.index]
    return held == body or _same_plaintext(held, body) or renders_as(held, event, render)


def only_in_history(
    workspace: Workspace,
    target: TargetConfig,
    event: ObjectEvent,
    folder: Folder,
    depth: int = HISTORY_DEPTH,
) -> bool:
    """W1 (historical): whether the event's object is what Git held at an older commit but not
    what the work tree holds now: the applier applied an artifact older than the tip. False
    for a DELETE, for an object the work tree holds as it came (no write: nothing to
    withhold), and for a kustomize folder (its objects are renders, not documents: not
    judged, mirrored as before). An object the tip no longer holds (deleted by a newer commit)
    whose older document equals it counts: re-adding it would undo that delete. Reads git
    only past those checks: the object's file (where the tip holds it, else its canonical
    path) at its last ``depth`` versions."""
    event = with_git_values(event, folder)
    body = event.body
    if event.operation == "DELETE" or body is None or folder.tree is not None:
        return False
    key = key_of(event)
    located = folder.find(key)
    if located is not None:
        held = located.documents[located.index]
        if held == body or _same_plaintext(held, body):
            return False
        path = located.path
    else:
        try:
            path = path_for(target, event)
        except PlacementRefused:
            return False
    for data in workspace.versions(path, depth, HISTORY_COMMITS):
        try:
            docs = parse(data)
        except Exception:  # a version nobody could parse holds nothing to compare
            continue
        for doc in docs:
            if identity(doc) == key and (doc == body or _same_plaintext(doc, body)):
                return True
    return False


def _bootstrap(workspace: Workspace, target: TargetConfig) -> None:
    """P4: the folder's first object brings the bootstrap files that are missing."""
    for file in BOOTSTRAP_FILES:
        path = inside(target.path, file.name)
        content = file.content(target)
        if content is not None and workspace.read(path) is None:
            workspace.write(path, content)


def _upsert(
    workspace: Workspace,
    target: TargetConfig,
    event: ObjectEvent,
    located: Located | None,
    folder: Folder,
    *,
    gate: Gate | None = None,
) -> Applied:
    assert event.body is not None
    body = event.body
    if located is None:
        try:
            path = place(workspace, target, event)
        except Unplaced as err:
            return Applied("refused", reason=err.reason, message=str(err))
        if is_sealed(event.body):
            stage_sops_bootstrap(workspace, target)  # P4 (the bootstrap hook's to stage)
        shadowed = folder.shadowed(key_of(event), path)
        if shadowed is not None:  # P4: an ignored path is never written
            return Applied("refused", reason=shadowed.reason, message=shadowed.detail)
        return _write_file(workspace, path, [body], gate=gate)
    if gate is not None:  # the variables Git holds where the live value is still their render
        kept = gate.keep(located.documents[located.index])
        if isinstance(kept, Mismatch):
            return _render_refused(kept)
        body = kept
    if located.documents[located.index] == body or _same_plaintext(
        located.documents[located.index], body
    ):
        return NO_WRITE  # same object, whatever the file's formatting (M3)
    docs = list(located.documents)
    docs[located.index] = body  # the whole API object replaces the document (M5)
    edited = _in_place(workspace, located, body, folder)
    return _write_file(workspace, located.path, docs, edited, gate)


def _same_plaintext(in_git: dict[str, Any], new: dict[str, Any]) -> bool:
    """P3: two sealed documents with one fingerprint hold the same plaintext for the same
    recipients (a document without one, or re-encrypted by a person, never matches)."""
    if not (is_sealed(in_git) and is_sealed(new)):
        return False
    found = stored_fingerprint(in_git)
    return bool(found) and found == stored_fingerprint(new)


def _delete(
    workspace: Workspace, target: TargetConfig, located: Located | None, folder: Folder
) -> Applied:
    if located is None or target.prune == "Never":
        return NO_WRITE
    docs = [d for i, d in enumerate(located.documents) if i != located.index]
    if not docs:
        workspace.delete(located.path)
        return Applied("write", path=located.path)
    return _write_file(workspace, located.path, docs, _in_place(workspace, located, None, folder))


def _through_kustomize(
    workspace: Workspace,
    target: TargetConfig,
    event: ObjectEvent,
    folder: Folder,
    gate: Gate | None = None,
) -> Applied:
    """P2: plan the edit on the folder's render, render again, and write only what verifies."""
    tree = folder.tree
    assert tree is not None
    key = key_of(event)
    body = None if event.operation == "DELETE" else event.body
    new_path = ""
    try:
        body = kept_variables(gate, tree, key, body)
        if body is None:
            if target.prune == "Never":
                return NO_WRITE
            plan = kustomize.plan_delete(tree, target.path, key, workspace.read)
        else:
            found = tree.find(key)
            new_path = found.file if found is not None else place(workspace, target, event)
            plan = kustomize.plan_upsert(tree, target.path, body, new_path, workspace.read)
        if plan is None:
            return NO_WRITE
        edits = {p: d for p, d in plan.finish().items() if workspace.read(p) != d}
        if not edits:
            return NO_WRITE
        files = sorted({*folder.files, *(p for p, d in edits.items() if d is not None)})
        files = [f for f in files if edits.get(f, b"") is not None]
        after = kustomize.render_folder(target.path, files, plan.reader(), previous=tree)
        kustomize.verify(tree, after, key, body)
        rendered_check(gate, after, key, body)
    except Unplaced as err:
        return Applied("refused", reason=err.reason, message=str(err))
    except (kustomize.Refused, kustomize.Unsupported) as err:
        renamed = renamed_by_namespace(tree, body, new_path) if new_path else ""
        if renamed:
            return Applied("refused", reason="KustomizeRenderRefused", message=renamed)
        if isinstance(err, kustomize.Refused):
            return Applied("refused", reason=err.reason, message=str(err))
        return Applied("refused", reason="UnsupportedContent", message=str(err))
    for path, data in sorted(edits.items()):
        if data is None:
            workspace.delete(path)
        else:
            workspace.write(path, data)
    folder.kustomized(files, after)
    return Applied("write", path=min(edits))


def _in_place(
    workspace: Workspace, located: Located, body: dict[str, Any] | None, folder: Folder
) -> bytes | None:
    """P1: the file edited where it stands, when a person wrote it (comments, order, style and
    the other documents kept); None for a file the product wrote, which is rewritten whole as
    today (the same bytes an in-place edit would give, for a fraction of the cost)."""
    current = workspace.read(located.path)
    if current is None or folder.rendered(located.path, current):
        return None
    known = folder.edited_in_place(located.path, current)  # a person's file, edited before
    if not known and current == _rendered(located.documents):
        return None
    return edit_file(current, located.documents, located.index, body)


def _rendered(docs: list[dict[str, Any]]) -> bytes:
    return b"---\n".join(render(doc) for doc in docs)


def _write_file(
    workspace: Workspace,
    path: str,
    docs: list[dict[str, Any]],
    edited: bytes | None = None,
    gate: Gate | None = None,
) -> Applied:
    data = edited if edited is not None else _rendered(docs)
    mismatch = gate.check(data) if gate is not None else None
    if mismatch is not None and workspace.read(path) != data:
        return _render_refused(mismatch)  # bytes already there are no write to refuse
    if not workspace.write_if_changed(path, data):
        return NO_WRITE
    rendered = data if edited is None else None
    return Applied("write", path=path, documents=tuple(docs), rendered=rendered, edited=edited)


def _render_refused(mismatch: Mismatch) -> Applied:
    """The render-fidelity gate's refusal: nothing written (docs/writing.md)."""
    return Applied("refused", reason=mismatch.reason, message=mismatch.message)
