"""Git's value kept for the fields a rule's ``ignoreDifferences`` names (issue 27.13).

The event names the fields (``ObjectEvent.ignored``, JSON pointers the watcher found); the
document Git holds for the object gives their values (``shared.decide.differences``). The writer
takes the event this returns instead of the one that came, so an edit of only those fields makes
the document Git already holds: no write (M3), no commit. An object Git does not hold yet, a
DELETE and a sealed Secret come back unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from services.branch_worker.folder import Folder
from shared.decide.differences import keep_git_values
from shared.model.events import ObjectEvent
from shared.model.sops import is_sealed


def held_document(event: ObjectEvent, folder: Folder) -> dict[str, Any] | None:
    """The document the work tree holds for the event's object (a kustomize folder: its
    render), or None."""
    oid = event.object_id
    key = (oid.group, oid.kind, oid.namespace, oid.name)
    if folder.tree is not None:
        found = folder.tree.find(key)
        return None if found is None else found.obj
    located = folder.find(key)
    return None if located is None else located.documents[located.index]


def with_git_values(event: ObjectEvent, folder: Folder) -> ObjectEvent:
    """``event`` with its ignored fields as Git holds them."""
    body = event.body
    if not event.ignored or body is None or event.operation == "DELETE" or is_sealed(body):
        return event
    held = held_document(event, folder)
    if held is None:
        return event
    return replace(event, body=keep_git_values(body, held, event.ignored))
