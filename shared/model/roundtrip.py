"""In-place edits of a manifest file that a person wrote (P1; M5 still decides the content).

A file the product wrote is rewritten whole (its bytes are what ``manifest.render`` gives). A
file in any other style is edited where it stands, so that a diff of the commit shows only what
the API changed: comments, key order, quoting, indentation and the other documents of a
multi-document file are kept. It is done in three steps, each checked:

1. Fields the API object lacks are cut out of the text, line by line (``field_cuts.py``),
   using the positions the YAML composer gives every node: a field's lines run from its key
   to the last line holding its value, so a comment *below* a removed field stays.
   Then each multi-line scalar the edit leaves as it is stands in as a one-line token, in the
   text and in the loaded documents (``shared.model.kept_scalars``): ruamel writes such
   scalars in its own style, and the file's own text comes back for the token at the end.
2. What is left is loaded with ruamel's round-trip loader, changed to the API object (changed
   scalars replaced, new keys inserted after their predecessor, lists edited item by item) and
   dumped twice, unedited and edited, with the indentation the file uses.
3. The two dumps are compared line by line, and only the stretches the edit touched are taken
   from the edited dump; everything else keeps the file's own bytes, even where ruamel would
   have written it differently (a first update never reformats a file).

The result must decode (YAML 1.2, as the folder is read, and YAML 1.1, as kubectl and Argo CD
read it) to exactly the documents intended; when it does not, ruamel's whole edited dump is
tried, then both again without tokens, and when all fail, ``None`` tells the caller to write
the file canonically.
Pure: no IO.
"""

from __future__ import annotations

import difflib
import io
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.nodes import MappingNode, Node, SequenceNode
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString, PlainScalarString

from shared.model import kept_scalars
from shared.model.field_cuts import Lines, compose, cut_removed_fields
from shared.model.kept_scalars import Kept
from shared.model.manifest import canonical_value, parse, yaml11_safe_representer

#: Indentation of the product's own files (mapping, sequence item, dash offset): the guess when
#: a document shows none (it has no nested block mapping or list).
PRODUCT_INDENT = (2, 4, 2)
#: ruamel folds lines longer than its width; a manifest line is never folded by us.
NO_FOLDING = 4096

#: Indentation as ruamel takes it: (mapping, sequence item, dash offset).
Indent = tuple[int, int, int]


def edit_file(
    data: bytes, documents: Sequence[Mapping[str, Any]], index: int, body: Mapping[str, Any] | None
) -> bytes | None:
    """``data`` (whose object documents are ``documents``) with its ``index``-th object document
    made equal to ``body``, or removed when ``body`` is None; None when no in-place edit decodes
    to exactly that (the caller then writes the file canonically)."""
    wanted = [dict(doc) for doc in documents]
    if body is None:
        del wanted[index]
    else:
        wanted[index] = dict(body)
    try:
        text = data.decode()
        composed = compose(text)  # once: the cuts, the indentation and the load read it
        nodes = [node for node in composed if isinstance(node, MappingNode)]
        styled = index if body is not None or len(nodes) == 1 else (index + 1) % len(nodes)
        trimmed = cut_removed_fields(text, nodes[index], body)
        if trimmed != text:  # something cut: compose what is left (else the same, composed)
            composed = compose(trimmed)
        kept = kept_scalars.find(trimmed, composed, _per_document(composed, documents, index, body))
        edit = Edit(index, body, _guess_indent(nodes[styled]), kept)
        found = _first_decoding(trimmed, edit, composed, wanted)
        if found is None and kept:  # a file whose maps are indented in more than one way
            found = _first_decoding(trimmed, replace(edit, kept=[]), composed, wanted)
    except Exception:  # any text ruamel cannot round-trip: the caller writes it canonically
        return None
    return None if found is None else found.encode()


def _first_decoding(
    text: str, edit: Edit, composed: list[Node], wanted: list[dict[str, Any]]
) -> str | None:
    """The first candidate of an edit (the file's lines with the touched stretches, ruamel's
    whole dump) that decodes to what is wanted, the kept scalars' text put back; None when
    neither does. A kept scalar's own text is the file's, indented for where the file has it:
    when ruamel writes its key elsewhere (a file whose maps are indented in more than one
    way), it does not decode, and the caller tries again without keeping any."""
    for candidate in _merge_edit(kept_scalars.shield(text, edit.kept), edit, composed):
        restored = kept_scalars.restore(candidate, text, edit.kept)
        edited = None if edit.body is None else edit.index
        if restored is not None and _decodes_to(restored, wanted, edited):
            return restored
    return None


def _per_document(
    composed: list[Node],
    documents: Sequence[Mapping[str, Any]],
    index: int,
    body: Mapping[str, Any] | None,
) -> list[Any]:
    """Per composed document, the object it must hold after the edit (None: a document that
    holds no object, or the one removed)."""
    objects = iter([*documents[:index], body, *documents[index + 1 :]])
    return [next(objects) if isinstance(node, MappingNode) else None for node in composed]


@dataclass(frozen=True, slots=True)
class Edit:
    """One in-place edit: the object document's index, what it becomes (None: removed), the
    indentation to write with, and the untouched multi-line scalars standing in as tokens."""

    index: int
    body: Mapping[str, Any] | None
    indent: Indent
    kept: list[Kept]


# Step 2: the round-trip edit ---------------------------------------------------------------


def _merge_edit(text: str, edit: Edit, composed: list[Node]) -> tuple[str, str]:
    """(the text with only the touched stretches taken from the edited dump, that dump), both
    with the kept scalars' tokens. ``text`` is the file with those tokens; ``composed`` the
    documents of the file without them (their values are what the tokens replace), constructed
    instead of parsing the text again (the parse was a third of an in-place edit's cost)."""
    dumper = _dumper(text, edit.indent)
    loaded = [dumper.constructor.construct_document(node) for node in composed]
    for item in edit.kept:
        _put_token(loaded[item.document], item)
    positions = [i for i, doc in enumerate(loaded) if isinstance(doc, Mapping)]
    before = _dump(dumper, loaded)
    if edit.body is None:
        del loaded[positions[edit.index]]
    else:
        ours = [k for k in edit.kept if k.document == positions[edit.index]]
        body = kept_scalars.shield_object(edit.body, ours)
        loaded[positions[edit.index]] = _merged(loaded[positions[edit.index]], body)
    after = _dump(dumper, loaded)
    if after == before:
        return text, text
    return "".join(_three_way(text.splitlines(True), before, after)), "".join(after)


def _put_token(document: Any, item: Kept) -> None:
    """The kept scalar at ``item.path`` of a round-trip loaded document replaced by its token,
    written plain (a map keeps a replaced block's style for a bare string), with the comment
    lines after it kept on their own lines (``_replace``)."""
    parent = document
    for step in item.path[:-1]:
        parent = parent[_key_in(parent, step)]
    _replace(parent, _key_in(parent, item.path[-1]), PlainScalarString(item.token))


def _key_in(parent: Any, step: str | int) -> Any:
    """The round-trip key of a path step: a list index, or the map key written as ``step``
    (a plain ``1:`` loads as the number 1, the plain object's key is the string)."""
    if not isinstance(parent, Mapping):
        return step
    return step if step in parent else next(k for k in parent if str(k) == step)


def _dumper(text: str, indent: Indent) -> YAML:
    """A round-trip dumper writing with ``text``'s indentation (mapping, sequence, offset)."""
    dumper = YAML(typ="rt", pure=True)
    dumper.Representer = yaml11_safe_representer()
    dumper.preserve_quotes = True
    dumper.width = NO_FOLDING
    mapping, sequence, offset = indent
    dumper.indent(mapping=mapping, sequence=sequence, offset=offset)
    dumper.explicit_start = text.lstrip().startswith("---")
    return dumper


def _dump(dumper: YAML, documents: list[Any]) -> Lines:
    stream = io.StringIO()
    dumper.dump_all(documents, stream)
    return stream.getvalue().splitlines(True)


def _guess_indent(root: Node) -> Indent:
    """(mapping, sequence, offset) indentation as the document uses it, else the product's."""
    mapping = sequence = offset = None
    stack = [root]
    while stack and (mapping is None or sequence is None):
        node = stack.pop()
        if not isinstance(node, MappingNode) or node.flow_style:
            continue
        for key, value in node.value:
            column = key.start_mark.column
            nested = isinstance(value, MappingNode) and not value.flow_style
            if nested and mapping is None and value.start_mark.line > key.start_mark.line:
                mapping = value.start_mark.column - column
            if isinstance(value, SequenceNode) and not value.flow_style and value.value:
                if sequence is None and value.start_mark.line > key.start_mark.line:
                    offset = value.start_mark.column - column
                    sequence = offset + 2  # "- " (an empty first item has no column to read)
                stack.extend(v for v in value.value if isinstance(v, MappingNode))
            stack.append(value)
    if mapping is None or mapping < 1:
        mapping = PRODUCT_INDENT[0]
    if sequence is None or offset is None or sequence <= offset:
        sequence, offset = PRODUCT_INDENT[1], PRODUCT_INDENT[2]
    return mapping, sequence, offset


def _merged(old: Any, new: Any) -> Any:
    """``old`` (round-trip loaded) changed to equal ``new``, keeping what did not change."""
    if isinstance(old, CommentedMap) and isinstance(new, Mapping):
        for key in [k for k in old if k not in new]:
            del old[key]
        previous = None  # a new key goes after its predecessor in ``new``, else at the end
        for key, value in new.items():
            if key in old:
                if not same(old[key], value):
                    _replace(old, key, _merged(old[key], value))
                previous = list(old).index(key)
            elif previous is None:
                old[key] = canonical_value(value)  # not above a comment about the first key
            else:
                previous += 1
                old.insert(previous, key, canonical_value(value))
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, list):
        for position, value in enumerate(new[: len(old)]):
            if not same(old[position], value):
                _replace(old, position, _merged(old[position], value))
        del old[len(new) :]
        old.extend(canonical_value(value) for value in new[len(old) :])
        return old
    return old if same(old, new) else canonical_value(new)


def _replace(parent: CommentedMap | CommentedSeq, key: Any, value: Any) -> None:
    """``parent[key] = value``, with the comment lines that followed the old value kept as
    lines after the new one.

    ruamel keeps those lines with the value above them (with a map's key, a list's position),
    together with that value's end-of-line comment. After a block scalar (``|``, ``>``) they
    start without a line break, the scalar having written its own: put after any other value
    they would join its line (``- 0 # c12``, ``-  # c12``), so they get the line break back.
    A new non-empty map or list would have them between its key (or dash) and its content,
    so they move after its last line, as a comment of its last leaf."""
    old = parent[key]
    parent[key] = value
    new = parent[key]  # ruamel restyles a string that replaces a block scalar as a block
    if new is old:
        return
    slot = 2 if isinstance(parent, CommentedMap) else 0
    entry = parent.ca.items.get(key)
    token = entry[slot] if entry and len(entry) > slot else None
    if token is None:
        return
    if isinstance(old, _BLOCK) and not isinstance(new, _BLOCK) and token.value[:1] != "\n":
        token.value = "\n" + " " * token.column + token.value
    if isinstance(new, Mapping | list) and new:
        entry[slot] = None
        if not any(entry):
            del parent.ca.items[key]
        parent[key] = leaf_parent = _commented(new)
        leaf = next(reversed(leaf_parent)) if isinstance(leaf_parent, Mapping) else -1
        while isinstance(leaf_parent[leaf], Mapping | list) and leaf_parent[leaf]:
            leaf_parent = leaf_parent[leaf]
            leaf = next(reversed(leaf_parent)) if isinstance(leaf_parent, Mapping) else -1
        leaf = leaf if isinstance(leaf_parent, Mapping) else len(leaf_parent) - 1
        comment: list[Any] = [None, None, None, None]
        comment[2 if isinstance(leaf_parent, Mapping) else 0] = token
        leaf_parent.ca.items[leaf] = comment


#: The two block scalar styles as ruamel loads them.
_BLOCK = (LiteralScalarString, FoldedScalarString)


def _commented(value: Any) -> Any:
    """``value`` with its maps and lists, all the way down, as ruamel's commented kinds (which
    carry comments)."""
    if isinstance(value, Mapping):
        return CommentedMap((key, _commented(item)) for key, item in value.items())
    if isinstance(value, list):
        return CommentedSeq(_commented(item) for item in value)
    return value


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``True`` is not ``1`` and ``1`` is not ``1.0`` (Python says so)."""
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        return (
            isinstance(a, Mapping)
            and isinstance(b, Mapping)
            and len(a) == len(b)
            and all(k in b and same(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    kinds = (bool, int, float, str)
    if any(isinstance(a, k) != isinstance(b, k) for k in kinds):
        return False
    return bool(a == b)


# Step 3: only the touched stretches --------------------------------------------------------


def _matches(a: Lines, b: Lines, *, restyled: bool = False) -> dict[int, int]:
    """Line i of ``a`` -> line j of ``b`` for the lines a diff finds unchanged; with
    ``restyled``, also the lines of a changed stretch as long on both sides, paired in order
    (the same lines written in another style: indented differently, say)."""
    pairs: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal" or (restyled and tag == "replace" and a2 - a1 == b2 - b1):
            pairs.update(zip(range(a1, a2), range(b1, b2), strict=True))
    return pairs


def _three_way(original: Lines, before: Lines, after: Lines) -> Lines:
    """``original`` with the change ``before`` -> ``after`` applied where it touches.

    Anchors are the lines of ``before`` that both the original and ``after`` hold unchanged;
    between two anchors, the original's lines stay unless the edit changed something there,
    in which case the edited dump's lines replace them."""
    kept, edited = _matches(before, original, restyled=True), _matches(before, after)
    anchors = [(-1, -1, -1)]
    anchors += [(j, kept[j], edited[j]) for j in range(len(before)) if j in kept and j in edited]
    anchors.append((len(before), len(original), len(after)))
    out: Lines = []
    for (j0, o0, n0), (j1, o1, n1) in itertools.pairwise(anchors):
        if j0 >= 0:
            out.append(original[o0])
        untouched = n1 - n0 == j1 - j0 and all(j in edited for j in range(j0 + 1, j1))
        out.extend(original[o0 + 1 : o1] if untouched else after[n0 + 1 : n1])
    return out


# The check ---------------------------------------------------------------------------------


def _decodes_to(text: str, wanted: list[dict[str, Any]], edited: int | None) -> bool:
    """Every object document as wanted (YAML 1.2), the edited one under YAML 1.1 too."""
    try:
        decoded = parse(text.encode())
        if len(decoded) != len(wanted) or not all(map(same, decoded, wanted)):
            return False
        if edited is None:
            return True
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when it is there
        docs = [d for d in yaml.load_all(text, Loader=loader) if isinstance(d, Mapping)]
        return len(docs) == len(wanted) and same(docs[edited], wanted[edited])
    except Exception:  # a candidate that does not even parse is not the answer
        return False
