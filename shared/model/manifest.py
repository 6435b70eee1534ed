"""What an API object looks like in Git: sanitised (M2) and rendered as stable YAML.

The same object must give the same bytes every time, or every watch event would be a commit.
So sanitising is an allowlist (unknown top-level fields of the server are dropped, payload
fields kept), bookkeeping that controllers stamp on objects is stripped, and rendering puts
``apiVersion``, ``kind`` and ``metadata`` first, with the rest sorted, in 2-space YAML.
"""

from __future__ import annotations

import copy
import io
import threading
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

from shared.model.fast_render import fast_render
from shared.model.simple_yaml import simple_dump, yaml11_typed

#: Top-level fields that carry what the user wrote (payload), besides apiVersion/kind/metadata.
PAYLOAD_FIELDS = frozenset(
    {
        "spec",
        "data",
        "binaryData",
        "rules",
        "subjects",
        "roleRef",
        "webhooks",
        "template",
        "type",
        "involvedObject",
        "reason",
        "message",
        "eventTime",
        "secrets",
        "imagePullSecrets",
        "automountServiceAccountToken",
        "immutable",
    }
)
#: Metadata fields copied to Git; everything else in metadata belongs to the server.
KEPT_METADATA = ("name", "namespace", "labels", "annotations")
#: Label and annotation prefixes stamped by kubectl, Flux, Argo CD and friends (bookkeeping).
BOOKKEEPING_PREFIXES = (
    "kubectl.kubernetes.io/",
    "kustomize.toolkit.fluxcd.io/",
    "control-plane.alpha.kubernetes.io/",
    "deployment.kubernetes.io/",
    "autoscaling.alpha.kubernetes.io/",
    "applyset.kubernetes.io/",
    "kro.run/",
)
BOOKKEEPING_KEYS = frozenset(
    {"argocd.argoproj.io/tracking-id", "argocd.argoproj.io/installation-id", "kcp.io/cluster"}
)
#: Fields the server fills in by itself for some kinds; mirroring them would fight the server.
SERVER_FILLED_SPEC = {
    "Service": (
        "clusterIP",
        "clusterIPs",
        "healthCheckNodePort",
        "ipFamilies",
        "ipFamilyPolicy",
        "internalTrafficPolicy",
    ),
    "Pod": ("nodeName",),
    "PersistentVolumeClaim": ("volumeName", "volumeMode"),
}


def _bookkeeping(key: str) -> bool:
    return key in BOOKKEEPING_KEYS or key.startswith(BOOKKEEPING_PREFIXES)


def _clean_map(values: Any) -> dict[str, str] | None:
    if not isinstance(values, Mapping):
        return None
    kept = {k: v for k, v in values.items() if not _bookkeeping(str(k))}
    return dict(sorted(kept.items())) or None


def sanitise(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as it belongs in Git: no status, no server metadata, no bookkeeping."""
    metadata = obj.get("metadata") or {}
    clean_meta: dict[str, Any] = {}
    for key in KEPT_METADATA:
        value = metadata.get(key)
        if key in ("labels", "annotations"):
            value = _clean_map(value)
        if value not in (None, ""):
            clean_meta[key] = value
    result: dict[str, Any] = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": clean_meta,
    }
    for key in sorted(k for k in obj if k in PAYLOAD_FIELDS):
        result[key] = copy.deepcopy(obj[key])
    spec = result.get("spec")
    if isinstance(spec, dict):
        for field in SERVER_FILLED_SPEC.get(str(obj.get("kind")), ()):
            spec.pop(field, None)
    return result


#: Characters YAML treats as line breaks inside a plain or single-quoted scalar.
_YAML_BREAKS = frozenset("\x85\u2028\u2029\r")


def _literal_safe(text: str) -> bool:
    """A multi-line string that a YAML literal block holds exactly (else it stays quoted)."""
    lines = text.split("\n")
    return (
        len(lines) > 1
        and text.isprintable() is False
        and all(line == line.rstrip() and line.isprintable() for line in lines)
        and not text.startswith((" ", "\n"))
    )


def _key(key: Any) -> str:
    text = str(key)
    if any(char in _YAML_BREAKS for char in text):
        quoted: str = DoubleQuotedScalarString(text)
        return quoted
    return text


def _canonical(value: Any) -> Any:
    """Maps with sorted keys, multi-line strings as literal blocks, all the way down."""
    if isinstance(value, Mapping):
        return {_key(key): _canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, str) and _literal_safe(value):
        return LiteralScalarString(value)
    if isinstance(value, str) and any(char in _YAML_BREAKS for char in value):
        return DoubleQuotedScalarString(value)  # escaped, or YAML reads them as line breaks
    return value


def canonical_value(value: Any) -> Any:
    """A value as the product writes it (sorted keys, literal blocks): what an in-place edit
    puts where the API added or changed a field."""
    return _canonical(value)


def ordered_document(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as it is written: apiVersion, kind, metadata first, the rest sorted."""
    head = ("apiVersion", "kind")
    ordered = {key: obj[key] for key in head if key in obj}
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        ordered["metadata"] = {
            key: _canonical(metadata[key]) for key in KEPT_METADATA if key in metadata
        }
    rest = {key: value for key, value in obj.items() if key not in (*head, "metadata")}
    ordered.update(_canonical(rest))
    return ordered


class _Yaml11SafeRepresenter(RoundTripRepresenter):
    """ruamel's round-trip representer, but a plain string that YAML 1.1 would read as a bool,
    null, number or date is single-quoted (M2; the probe's YAML 1.1 finding): ruamel's YAML
    1.2 writes ``yes`` or ``1:20`` plain, and kubectl, Argo CD (``sigs.k8s.io/yaml``) and
    PyYAML then read another object."""

    def represent_str(self, data: str) -> Any:
        if yaml11_typed(data):
            return self.represent_scalar("tag:yaml.org,2002:str", data, style="'")
        return super().represent_str(data)


_Yaml11SafeRepresenter.add_representer(str, _Yaml11SafeRepresenter.represent_str)


def yaml11_safe_representer() -> type[RoundTripRepresenter]:
    """The representer every writer uses, so an in-place edit quotes as a new file does."""
    return _Yaml11SafeRepresenter


def _dumper() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.Representer = _Yaml11SafeRepresenter
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


#: One configured dumper per thread: building a ``YAML`` instance cost twice as much as the
#: dump itself, and an instance is not safe to share between threads.
_DUMPERS = threading.local()


def render(obj: Mapping[str, Any]) -> bytes:
    """Stable YAML bytes for a sanitised object: same object, same bytes.

    A simple object is written by ``fast_render`` in one pass, or ``simple_dump`` (the same
    bytes, many times faster); everything else by ruamel."""
    fast = fast_render(obj)
    if fast is not None:
        return fast
    document = ordered_document(obj)
    simple = simple_dump(document)
    if simple is not None:
        return simple.encode()
    return render_with_ruamel(document).encode()


def render_with_ruamel(document: Mapping[str, Any]) -> str:
    """An ordered document as ruamel writes it: the reference for every object."""
    dumper: YAML | None = getattr(_DUMPERS, "yaml", None)
    if dumper is None:
        dumper = _DUMPERS.yaml = _dumper()
    stream = io.StringIO()
    dumper.dump(document, stream)
    return stream.getvalue()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def parse(data: bytes) -> list[dict[str, Any]]:
    """The YAML documents of a file as plain dicts (empty documents skipped)."""
    docs = YAML(typ="safe", pure=True).load_all(data.decode())
    return [_plain(doc) for doc in docs if isinstance(doc, Mapping)]
