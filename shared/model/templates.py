"""Commit-message templates (GitProvider ``spec.commit.message``) in Go ``text/template`` syntax,
with the Go operator's variables, so its users' templates carry over (issue 15; C1, T4).

``check`` parses a template, checks every field it names in every branch against the
variables (``missingkey=error``) and runs it on sample data; the watcher calls it to refuse a
bad template in the GitProvider's status, the branch worker through ``render``, which falls back
to the built-in template on a ``TemplateError`` (so a bad template fails only its own commits'
wording). The engine is ``shared.gotemplate``; its bounds hold whatever the template:
steps, the output, and every value a run makes (N3), so checking a hostile template costs
milliseconds and a few MiB. The outcome of a check is remembered, a refusal too.

The ``{name}`` ``str.format`` syntax of earlier versions is refused with a message naming the
Go spelling (docs/crds.md, "Commit message templates"). A rendered message is cut at
``MAX_MESSAGE`` characters (git gets it as one argument; the kernel refuses one over 128 KiB)
and loses its NUL characters.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from shared.gotemplate import (
    INT,
    STRING,
    GoMap,
    Record,
    Shape,
    Template,
    TemplateError,
    parse,
)
from shared.model.ids import ObjectId

__all__ = ["TemplateError"]

#: Longest message handed to git, in characters.
MAX_MESSAGE = 16 * 1024
#: Longest template the CRD admits (its ``maxLength``).
MAX_TEMPLATE = 4096
OPERATIONS = ("CREATE", "UPDATE", "DELETE")

_RESOURCE = Shape(
    "record",
    {name: STRING for name in ("Group", "Version", "Resource", "Namespace", "Name")},
    name="Resource",
)
_EVENT_NAMES = ("Operation", "Group", "Version", "Resource", "Namespace", "Name", "APIVersion",
                "Username", "GitTarget")  # fmt: skip
EVENT_SHAPE = Shape("record", {name: STRING for name in _EVENT_NAMES}, name="EventData")
GROUP_SHAPE = Shape(
    "record",
    {
        "Author": STRING,
        "GitTarget": STRING,
        "Count": INT,
        "Operations": Shape("map", elem=INT, keys=frozenset(OPERATIONS), name="Operations"),
        "Resources": Shape("list", elem=_RESOURCE),
    },
    name="GroupData",
)


@dataclass(frozen=True)
class Variables:
    """What one kind of template may name, and sample data to run it on at admission."""

    field: str  # the GitProvider field, for messages
    shape: Shape
    samples: tuple[Record, ...]


def _resource(oid: ObjectId) -> Record:
    item = Record(
        Group=oid.group,
        Version=oid.version,
        Resource=oid.resource,
        Namespace=oid.namespace,
        Name=oid.name,
    )
    item.type_name = "Resource"
    return item


def event_data(operation: str, oid: ObjectId, username: str, git_target: str) -> Record:
    """An event template's variables (facts 3.5); ``username`` "" when no actor is named."""
    data = Record(
        Operation=operation,
        Group=oid.group,
        Version=oid.version,
        Resource=oid.resource,
        Namespace=oid.namespace,
        Name=oid.name,
        APIVersion=oid.api_version,
        Username=username,
        GitTarget=git_target,
    )
    data.type_name = "EventData"
    return data


def group_data(author: str, git_target: str, writes: Iterable[tuple[str, ObjectId]]) -> Record:
    """A group template's variables: ``Count`` writes, ``Operations`` counted per operation,
    ``Resources`` one per object (by group, resource, namespace, name) in first-seen order."""
    counts: dict[str, int] = {}
    resources: dict[tuple[str, str, str, str], Record] = {}
    count = 0
    for operation, oid in writes:
        count += 1
        counts[operation] = counts.get(operation, 0) + 1
        key = (oid.group, oid.resource, oid.namespace, oid.name)
        resources.setdefault(key, _resource(oid))
    operations = GoMap(counts)
    operations.zero, operations.zero_keys = 0, frozenset(OPERATIONS)
    data = Record(
        Author=author,
        GitTarget=git_target,
        Count=count,
        Operations=operations,
        Resources=list(resources.values()),
    )
    data.type_name = "GroupData"
    return data


_CM = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "settings")
_DEPLOY = ObjectId("apps", "v1", "deployments", "Deployment", "team", "web")
_NS = ObjectId("", "v1", "namespaces", "Namespace", "", "team")
EVENT = Variables(
    "eventTemplate",
    EVENT_SHAPE,
    (
        event_data("UPDATE", _DEPLOY, "alice@example.com", "apps"),
        event_data("CREATE", _NS, "", "cluster"),
        event_data("DELETE", _CM, "system:serviceaccount:ci:deployer", "apps"),
    ),
)
GROUP = Variables(
    "groupTemplate",
    GROUP_SHAPE,
    (
        group_data("Alice", "apps", [("CREATE", _CM), ("UPDATE", _DEPLOY), ("UPDATE", _CM)]),
        group_data("", "cluster", [("DELETE", _NS), ("DELETE", _CM)]),
    ),
)

#: A GitTarget's ``liveTemplate`` (issue 27.7): one template for every window of API edits,
#: so it may name what an event template and a group template name; in a window of several
#: writes the event fields describe its first write.
LIVE_SHAPE = Shape("record", {**EVENT_SHAPE.fields, **GROUP_SHAPE.fields}, name="LiveData")
#: A GitTarget's ``reconcileTemplate``: a window of the deletes a listing found (D2). The type
#: fields are empty when they differ among its writes; ``Revision`` is the newest
#: resourceVersion the writes carry ("" when none does).
_RECONCILE_NAMES = ("Group", "Version", "Resource", "APIVersion", "Namespace", "Revision",
                    "GitTarget")  # fmt: skip
RECONCILE_SHAPE = Shape(
    "record", {**{n: STRING for n in _RECONCILE_NAMES}, "Count": INT}, name="ReconcileData"
)


def live_data(
    author: str, username: str, git_target: str, writes: Sequence[tuple[str, ObjectId]]
) -> Record:
    """A live template's variables: the group's, and the first write's event fields."""
    operation, oid = writes[0] if writes else ("", ObjectId("", "", "", "", "", ""))
    data = Record(
        {
            **group_data(author, git_target, writes),
            **event_data(operation, oid, username, git_target),
        }
    )
    data.type_name = "LiveData"
    return data


def reconcile_data(git_target: str, writes: Sequence[tuple[ObjectId, str]]) -> Record:
    """A reconcile template's variables for ``writes`` (object, resourceVersion)."""
    first = writes[0][0] if writes else None

    def same(name: str) -> str:
        values = {str(getattr(oid, name)) for oid, _ in writes}
        return values.pop() if len(values) == 1 and first is not None else ""

    data = Record(
        Group=same("group"),
        Version=same("version"),
        Resource=same("resource"),
        APIVersion=same("api_version"),
        Namespace=same("namespace"),
        Revision=max((rv for _, rv in writes), key=lambda v: (len(v), v), default=""),
        GitTarget=git_target,
        Count=len(writes),
    )
    data.type_name = "ReconcileData"
    return data


LIVE = Variables(
    "liveTemplate",
    LIVE_SHAPE,
    (
        live_data("", "alice@example.com", "apps", [("UPDATE", _DEPLOY)]),
        live_data("Alice", "", "apps", [("CREATE", _CM), ("UPDATE", _DEPLOY)]),
    ),
)
RECONCILE = Variables(
    "reconcileTemplate",
    RECONCILE_SHAPE,
    (
        reconcile_data("apps", [(_CM, "1331"), (_CM, "1332")]),
        reconcile_data("cluster", [(_NS, ""), (_CM, "")]),
    ),
)
_VARIABLES = {v.field: v for v in (EVENT, GROUP, LIVE, RECONCILE)}

_LEGACY = re.compile(r"\{(operation|kind|namespace|name|path|count)(:[<>^]?[0-9]{0,2})?\}")
_GO_SPELLING = {"operation": "{{.Operation}}", "kind": "{{.Resource}}",
                "namespace": "{{.Namespace}}", "name": "{{.Name}}", "path": "{{.GitTarget}}",
                "count": "{{.Count}}"}  # fmt: skip


def check(template: str, variables: Variables) -> Template:
    """The parsed template, or TemplateError saying what is wrong, for the user."""
    checked = _checked(template, variables.field)
    if isinstance(checked, TemplateError):
        raise TemplateError(str(checked))  # a new one: a raise adds to the cached one's traceback
    return checked


@functools.lru_cache(maxsize=256)
def _checked(template: str, which: str) -> Template | TemplateError:
    """The outcome, a refusal too: the watcher checks every GitProvider each pass, and a
    template that fails only after its whole budget of steps would cost that every pass."""
    try:
        return _check(template, which)
    except TemplateError as err:
        err.__traceback__ = None
        return err


def _check(template: str, which: str) -> Template:
    variables = _VARIABLES[which]
    where = f"{variables.field} {_excerpt(template)}"
    legacy = _LEGACY.search(template)
    if legacy and "{{" not in template:
        raise TemplateError(
            f"{where} uses the old {{{legacy.group(1)}}} syntax, which is no longer read:"
            f" write Go template syntax, e.g. {_GO_SPELLING[legacy.group(1)]}"
        )
    if len(template) > MAX_TEMPLATE:
        raise TemplateError(f"{where} is longer than {MAX_TEMPLATE} characters")
    try:
        parsed = parse(template)
        parsed.check_fields(variables.shape)
        for sample in variables.samples:
            parsed.render(sample, MAX_MESSAGE)
    except TemplateError as err:
        raise TemplateError(f"{where}: {err}") from None
    return parsed


def _excerpt(template: str) -> str:
    return repr(template if len(template) <= 80 else template[:77] + "...")


def render(template: str, variables: Variables, data: Record) -> str:
    """The message: ``template`` checked and run on ``data``, no NUL, at most ``MAX_MESSAGE``
    characters; TemplateError if the template is bad or fails on this data."""
    parsed = check(template, variables)
    try:
        text = parsed.render(data, MAX_MESSAGE)
    except TemplateError as err:
        raise TemplateError(f"{variables.field} {_excerpt(template)}: {err}") from None
    return text.replace("\0", "")
