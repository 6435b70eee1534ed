"""A window's commit message and its committer (C1, P5; facts §3.6).

Pure: what a window's commit says follows from the branch's settings and the window alone.
"""

from __future__ import annotations

from services.branch_worker.windows import OpenWindow
from shared.git.workspace import Committer
from shared.model import templates
from shared.model.attribution import Author
from shared.model.config import BranchConfig
from shared.model.defaults import EVENT_TEMPLATE, GROUP_TEMPLATE


def committer(config: BranchConfig) -> Committer:
    """The GitProvider's committer, who makes every commit of the branch."""
    return Committer(config.committer_name, config.committer_email)


def username(author: Author | None) -> str:
    """The Kubernetes user a window's edits are attributed to, "" when none was resolved
    (attribution off, or the sentinel, which is never put in a message: facts §3.6)."""
    return author.username if author is not None and author.outcome == "resolved" else ""


def message(config: BranchConfig, window: OpenWindow) -> tuple[str, str]:
    """The commit message, and why a template could not be used ("" if it could): the
    GitTarget's own template (issue 27.7: ``reconcileTemplate`` for a window of a listing's
    deletes, ``liveTemplate`` for any other), else the GitProvider's; a bad one falls back to
    the next, so the write is still made (C1)."""
    own = _target_message(config, window)
    if own is not None and not own[1]:
        return own
    text, problem = provider_message(config, window)
    return text, (own[1] if own is not None else problem)


def _target_message(config: BranchConfig, window: OpenWindow) -> tuple[str, str] | None:
    """The GitTarget's template run on the window (None: it has none for this window)."""
    target = window.target
    entries = [e for e in window.entries if e.event]
    events = [e.event for e in entries if e.event]
    try:
        if target.reconcile_template and events and all(e.listing for e in entries):
            writes = [(e.object_id, e.resource_version) for e in events]
            data = templates.reconcile_data(target.name, writes)
            return templates.render(target.reconcile_template, templates.RECONCILE, data), ""
        if target.live_template:
            user = username(window.author)
            author = user or config.committer_name
            pairs = [(e.operation, e.object_id) for e in events]
            data = templates.live_data(author, user, target.name, pairs)
            return templates.render(target.live_template, templates.LIVE, data), ""
    except templates.TemplateError as err:
        return "", str(err)
    return None


def provider_message(config: BranchConfig, window: OpenWindow) -> tuple[str, str]:
    """The GitProvider's wording, and why its template could not be used ("" if it could):
    a bad template falls back to the built-in one (C1). ``Username`` and ``Author`` are the
    window's resolved user (P5); with none resolved no actor is named (``Username`` "") and
    ``Author`` is the committer (facts 3.6)."""
    events = [e.event for e in window.entries if e.event]
    name = window.target.name
    if len(events) == 1:
        event = events[0]
        data = templates.event_data(event.operation, event.object_id, username(window.author), name)
        own, variables, builtin = config.message_one, templates.EVENT, EVENT_TEMPLATE
    else:
        author = username(window.author) or config.committer_name
        writes = [(e.operation, e.object_id) for e in events]
        data = templates.group_data(author, name, writes)
        own, variables, builtin = config.message_many, templates.GROUP, GROUP_TEMPLATE
    try:
        return templates.render(own, variables, data), ""
    except templates.TemplateError as err:
        return templates.render(builtin, variables, data), str(err)
