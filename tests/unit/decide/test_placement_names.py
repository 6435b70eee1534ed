"""Where documents go for the root folder and for names Kubernetes allows but a file system
does not (M4, M10; the reliability probe's C7 and C2 findings).

Failed before the fix: ``spec.path: "."`` refused every write with PathOutsideTarget, and a
253-character name made a 258-byte file name (ENAMETOOLONG, a stalled branch).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.decide.placement import MAX_FILE_NAME, PlacementRefused, canonical_path, inside
from shared.model.ids import ObjectId

LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=63)


def _cm(name: str, namespace: str = "t5") -> ObjectId:
    return ObjectId("", "v1", "configmaps", "ConfigMap", namespace, name)


@pytest.mark.parametrize("root", [".", "./", "/", "", "./."])
def test_dot_is_the_repository_root(root: str) -> None:
    assert canonical_path(root, _cm("at-root")) == "t5/configmaps/at-root.yaml"


def test_the_root_folder_still_refuses_leaving_the_repository() -> None:
    with pytest.raises(PlacementRefused):
        inside(".", "../x.yaml")


def test_a_name_of_253_characters_gets_a_valid_file_name() -> None:
    name = "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61
    assert len(name) == 253
    path = canonical_path("clusters/t12", _cm(name, "t12"))
    file = path.rpartition("/")[2]
    assert len(file.encode()) <= MAX_FILE_NAME
    assert path.startswith("clusters/t12/t12/configmaps/" + "a" * 63 + "." + "b" * 63)
    assert file.endswith(".yaml")
    assert canonical_path("clusters/t12", _cm(name, "t12")) == path  # deterministic


def test_a_name_that_fits_is_kept_whole() -> None:
    name = "x" * (MAX_FILE_NAME - len(".yaml"))
    assert canonical_path("", _cm(name)) == f"t5/configmaps/{name}.yaml"


@given(st.lists(LABEL, min_size=1, max_size=4).map(".".join), st.text(min_size=1, max_size=4))
def test_long_names_never_collide_and_always_fit(name: str, tail: str) -> None:
    """Two names differing anywhere (even past the kept prefix) get different files."""
    other = name + tail
    first, second = canonical_path("", _cm(name)), canonical_path("", _cm(other))
    assert first != second
    for path in (first, second):
        assert len(path.rpartition("/")[2].encode()) <= MAX_FILE_NAME


@given(st.text(min_size=200, max_size=253).filter(lambda n: "/" not in n and n not in (".", "..")))
def test_any_long_name_fits_in_a_file_name(name: str) -> None:
    path = canonical_path("apps", _cm(name))
    assert len(path.rpartition("/")[2].encode()) <= MAX_FILE_NAME
