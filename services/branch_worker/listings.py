"""Deletes missed while no watch state existed, found by comparing a listing with the folder (D2).

A watch that starts without a cursor (a new watch, or Redis lost its data, say after a restart
without persistence) lists its type in its namespace and publishes the names it found
(``Listing``) after the listed objects. Every document in the GitTarget's folder of that group,
kind and namespace whose name the listing lacks is an object deleted while nothing recorded its
DELETE: the watcher saw it but could not publish it, or no watcher ran. Each becomes a DELETE
event, applied like an observed one, so ``prune.mode: Never`` still keeps the document.

The comparison is scoped by identity, not by file path: GitTargets of other namespaces, or of
other types, sharing the folder are never touched; two GitTargets that mirror the same
namespace and type into one folder list the same objects, so they agree.
"""

from __future__ import annotations

from services.branch_worker.folder import Folder
from shared.model.events import Listing, ObjectEvent
from shared.model.ids import ObjectId


def missed_deletes(listing: Listing, folder: Folder) -> list[ObjectEvent]:
    """The DELETE of every object of the listing's type and namespace that the folder holds and
    the listing lacks, by name."""
    r = listing.resource
    gone = sorted(
        name
        for group, kind, namespace, name in folder.identities()
        if (group, kind, namespace) == (r.group, r.kind, r.namespace) and name not in listing.names
    )
    return [
        ObjectEvent(
            target=listing.target,
            operation="DELETE",
            object_id=ObjectId(r.group, r.version, r.resource, r.kind, r.namespace, name),
            uid="",
            resource_version="",
            body=None,
            managers=(),
            observed_at=listing.observed_at,
        )
        for name in gone
    ]
