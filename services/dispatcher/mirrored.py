"""Whether the watches feeding a branch have published what the API holds (D3, issue 11).

An API edit the watcher has not seen yet (it was down, or is still catching up from its
cursor) leaves the branch looking quiet: nothing is pending because the edit never reached the
stream. An apply then would revert it, and the watcher would mirror the revert. So just before
it stamps, the attempt lists each watch's namespace through the watch's own cluster and
compares with what the watch recorded after publishing (only the objects its
objectSelectors select, issue 27) (``shared.decide.quiet.unmirrored``);
any difference makes the request Stale. The watches are those the watcher last published for
the branch's GitTargets (``WatchState.publish_feeds``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shared.decide.quiet import unmirrored
from shared.decide.selectors import selectors_from_key, selects
from shared.kube.api import KubeClient
from shared.model.crd_meta import LabelSelector
from shared.model.ids import BranchKey
from shared.model.resources import ApiResource
from shared.store.config import ConfigStore
from shared.store.watches import WatchState


def selected(
    items: Sequence[Mapping[str, Any]], selectors: tuple[LabelSelector, ...] | None
) -> list[Mapping[str, Any]]:
    """The listed objects a watch with ``selectors`` publishes (issue 27: objectSelector)."""
    if selectors is None:
        return list(items)
    found = []
    for obj in items:
        labels = (obj.get("metadata") or {}).get("labels")
        if selects(selectors, labels if isinstance(labels, Mapping) else {}):
            found.append(obj)
    return found


def behind(
    bk: BranchKey,
    configs: ConfigStore,
    watches: WatchState,
    cluster_for: Callable[[str], KubeClient],
) -> list[str]:
    """``namespace/resource/name`` of every object a watch of the branch has not published in
    its current state (empty: every watch is caught up with the API as listed just now)."""
    uids = [t.uid for t in configs.targets_of(bk)]
    feeds = watches.feeds(uids)
    knowns = watches.revisions_many([f.address for f in feeds])
    late: list[str] = []
    for feed, seen in zip(feeds, knowns, strict=True):
        resource = ApiResource(feed.group, feed.version, feed.resource, feed.kind, True)
        listing = cluster_for(feed.cluster).list(resource, feed.namespace)
        items = selected(listing.items, selectors_from_key(feed.selection))
        late += [f"{feed.namespace}/{feed.resource}/{n}" for n in unmirrored(items, seen)]
    return late
