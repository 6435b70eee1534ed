"""M2: the fast writer of simple manifests writes exactly what ruamel writes, or declines.

``render`` must give the same bytes for the same object whichever writer it used, or a file
written before would differ from the same object written now (a needless commit).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.model.manifest import ordered_document, render, render_with_ruamel
from shared.model.simple_yaml import simple_dump

#: Strings YAML may read as something else, or that need quoting, escaping or folding.
AWKWARD = [
    "",
    " ",
    "a",
    "5",
    "007",
    "0x1F",
    "0o17",
    "1_000",
    "1e5",
    "e5",
    ".5",
    "-1",
    "+1",
    "1.0",
    ".inf",
    "-.inf",
    ".nan",
    "NaN",
    "inf",
    "2020-01-01",
    "2020-01-01T10:00:00Z",
    "12:30",
    "true",
    "True",
    "FALSE",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "N",
    "null",
    "Null",
    "~",
    "a: b",
    "a:b",
    "a:",
    "a #b",
    "a#b",
    "-a",
    "- a",
    "?a",
    "? a",
    "&a",
    "*a",
    "!a",
    "%a",
    "@a",
    "`a",
    "|a",
    ">a",
    "{a",
    "[a",
    "a,b",
    "a]",
    "'a'",
    '"a"',
    "it's",
    'say "hi"',
    " lead",
    "trail ",
    "two  spaces",
    "tab\there",
    "line\nbreak",
    "line\nbreak\n",
    "ü",
    "a\u2028b",
    "x" * 300,
    "word " * 60,
    "hello from object 5",
    "app.kubernetes.io/name",
    "/etc/config",
    "_under",
    "a-b_c.d/e",
    "v1",
    "A",
    "https://git.example.com/apps.git",
    "nginx:1.25",
    "registry:5000/team/app@sha256:0af3",
    "a=b,c=d",
    "k8s+v1",
    "a::b",
    "a: ",
    "a:: b",
    "http://x #frag",
]

#: Objects of the kinds a cluster holds most: the fast writer must take them.
TYPICAL: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm-00042", "namespace": "bench"},
        "data": {"index": "42", "greeting": "hello from object 42"},
    },
    {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "app-00001", "namespace": "bench", "labels": {"tier": "web"}},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://git.example.com/apps.git", "path": "app-1"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "apps"},
        },
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "team-a"},
        "spec": {
            "replicas": 3,
            "paused": False,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx",
                            "args": ["run", "fast"],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "MODE", "value": "production"}],
                            "resources": {},
                        }
                    ],
                    "volumes": [],
                    "nodeSelector": None,
                },
            },
        },
    },
]


def _same_or_declined(obj: dict[str, Any]) -> bool:
    """True when the fast writer took the object (and wrote ruamel's bytes)."""
    document = ordered_document(obj)
    fast = simple_dump(document)
    reference = render_with_ruamel(document)
    assert fast is None or fast == reference, (fast, reference)
    assert render(obj) == reference.encode()
    return fast is not None


def test_typical_objects_take_the_fast_writer_and_get_ruamels_bytes() -> None:
    for obj in TYPICAL:
        assert _same_or_declined(obj), obj["kind"]


def test_awkward_strings_as_values_keys_and_items_are_written_alike_or_declined() -> None:
    taken = set()
    for text in AWKWARD:
        for obj in (
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": text}},
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {text: "v"}},
            {"apiVersion": "v1", "kind": "List", "items": [text, "b"]},
            {"apiVersion": "v1", "kind": "List", "items": [{"k": text, "n": 1}]},
        ):
            if _same_or_declined(obj):
                taken.add(text)
    # the comparison is not vacuous: the common strings were written by the fast writer
    assert {"", "5", "007", "a", "hello from object 5", "nginx:1.25", "/etc/config"} - taken == {
        "/etc/config"  # not starting with a letter: left to ruamel
    }
    assert {"https://git.example.com/apps.git", "registry:5000/team/app@sha256:0af3"} <= taken
    assert {"true", "FALSE", "Null", "yes", "No", "y", "N", "on"} <= taken  # quoted or plain


def test_what_the_fast_writer_declines() -> None:
    declined: tuple[dict[str, Any], ...] = (
        {"multi": "line\nbreak\n"},  # a literal block
        {"ratio": 0.5},  # floats: ruamel's float formatting is left to ruamel
        {"nested": [[1, 2]]},
        {"items": [None]},
        {"items": [{}]},
        {"text": "x" * 300},
        {"ü": "v"},
    )
    for data in declined:
        document = ordered_document({"apiVersion": "v1", "kind": "ConfigMap", "data": data})
        assert simple_dump(document) is None, data
    assert simple_dump({}) is None


_scalars = st.one_of(
    st.sampled_from(AWKWARD),
    st.text(alphabet="abcXYZ019 _./-:#'\"@+=,%", max_size=12),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
_keys = st.one_of(st.sampled_from(AWKWARD[:40]), st.text(alphabet="abcXYZ019_./-", max_size=10))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(payload=st.dictionaries(_keys, _values, max_size=5), name=st.sampled_from(AWKWARD[:20]))
def test_generated_objects_are_written_as_ruamel_writes_them(
    payload: dict[str, Any], name: str
) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "spec": payload}
    _same_or_declined(obj)


_benign_scalars = st.one_of(
    st.from_regex(r"[a-zA-Z][a-z0-9_./:@+=,-]{0,10}( [a-z0-9./-]{1,5}){0,2}", fullmatch=True),
    st.from_regex(r"[0-9]{0,6}", fullmatch=True),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.booleans(),
    st.none(),
)
_benign_keys = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_./-]{0,10}", fullmatch=True)
_benign_values = st.recursive(
    _benign_scalars,
    lambda inner: st.one_of(
        st.lists(
            st.one_of(
                _benign_scalars.filter(lambda v: v is not None),
                st.dictionaries(_benign_keys, inner, min_size=1, max_size=3),
            ),
            max_size=3,
        ),
        st.dictionaries(_benign_keys, inner, max_size=4),
    ),
    max_leaves=16,
)


@settings(max_examples=200, deadline=None)
@given(payload=st.dictionaries(_benign_keys, _benign_values, max_size=5))
def test_generated_plain_objects_are_written_as_ruamel_writes_them(payload: dict[str, Any]) -> None:
    _same_or_declined({"apiVersion": "v1", "kind": "ConfigMap", "spec": payload})
