"""The subset against the real kustomize: every folder of ``corpus/`` (listed, with its marks,
in ``cases.json``) is rendered here and compared with what ``kubectl kustomize`` made of it,
``goldens/<case>.yaml`` (or ``goldens/<case>.error`` when kubectl refused it), which
``scripts/regenerate-kustomize-goldens`` writes with kubectl. CI needs no kubectl: it compares
with the committed goldens; where kubectl is installed the goldens are also checked against it.

A case without a mark must render here to the same objects as kubectl's, compared as parsed
documents in any order (kubectl sorts by kind; the writer keys objects by identity). A case
marked ``refused`` is outside the subset by design (or kubectl refuses it too): ours must
refuse it (``Unsupported``), and the mark records whether kubectl accepts it (``kubectl``),
which the golden must confirm. A case marked ``known_difference`` renders here but not as
kubectl does (or kubectl refuses it), for the reason the mark gives; it must still differ, so
a fix removes the mark.
No case is skipped: a folder without an entry in ``cases.json``, or an entry without its
folder or golden, fails."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared import kustomize
from shared.model.manifest import parse

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
GOLDENS = HERE / "goldens"
SCRIPT = HERE.parents[2] / "scripts" / "regenerate-kustomize-goldens"
CASES: list[dict[str, str]] = json.loads((HERE / "cases.json").read_text("utf-8"))["cases"]
MARKS = ("refused", "known_difference")
KUBECTL = shutil.which("kubectl")


def _script() -> ModuleType:
    """The goldens' script (no ``.py``: loaded by path), so the live check runs kubectl as the
    goldens were made."""
    loader = importlib.machinery.SourceFileLoader("regenerate_kustomize_goldens", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _reader(root: Path) -> kustomize.Reader:
    """The case's folder as the branch worker's work tree: repository-relative paths."""

    def read(path: str) -> bytes | None:
        full = root / path
        return full.read_bytes() if path and full.is_file() else None

    return read


def ours(case: dict[str, str]) -> list[dict[str, Any]]:
    """The objects the product renders for the case's folder (``render``, else the root), as
    the branch worker renders a GitTarget's ``spec.path``; raises ``Unsupported``."""
    root = CORPUS / case["name"]
    target = case.get("render", "")
    files = sorted(p.relative_to(root).as_posix() for p in (root / target).rglob("*"))
    files = [f for f in files if (root / f).is_file()]
    tree = kustomize.render_folder(target, files, _reader(root))
    return [r.obj for r in tree.objects]


def golden(case: dict[str, str]) -> list[dict[str, Any]] | None:
    """kubectl's objects for the case, or None when kubectl refused it."""
    output = GOLDENS / f"{case['name']}.yaml"
    return parse(output.read_bytes()) if output.exists() else None


def canonical(objects: list[dict[str, Any]]) -> list[str]:
    """Objects as a sorted list of canonical JSON texts: a multiset, key order ignored."""
    return sorted(json.dumps(obj, sort_keys=True) for obj in objects)


def _id(case: dict[str, str]) -> str:
    return case["name"]


def test_every_folder_is_a_case_with_one_golden_and_at_most_one_mark() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
    made = {p.name for p in GOLDENS.iterdir()} - {"kubectl-version.txt"}
    assert made == {f"{name}.{kind}" for name in names for kind in ("yaml", "error")} & made
    assert sorted(p.rsplit(".", 1)[0] for p in made) == sorted(names)
    for case in CASES:
        marks = [mark for mark in MARKS if mark in case]
        assert len(marks) <= 1, case
        assert all(case[mark].strip() for mark in marks), f"{case['name']}: a mark says why"
        assert ("kubectl" in case) == ("refused" in case), case
        assert case.get("kubectl", "accepts") in ("accepts", "refuses"), case


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_ours_renders_as_kubectl_or_refuses(case: dict[str, str]) -> None:
    theirs = golden(case)
    if "refused" in case:
        with pytest.raises(kustomize.Unsupported):
            ours(case)
        assert (theirs is not None) == (case["kubectl"] == "accepts"), "the mark's kubectl"
        return
    if "known_difference" in case:
        rendered = canonical(ours(case))
        assert theirs is None or rendered != canonical(theirs), "fixed: remove the mark"
        return
    assert theirs is not None, f"kubectl refuses {case['name']}: {_error(case)}"
    assert canonical(ours(case)) == canonical(theirs)


def _error(case: dict[str, str]) -> str:
    return (GOLDENS / f"{case['name']}.error").read_text("utf-8")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed: the goldens stand in")
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_goldens_are_what_kubectl_says(case: dict[str, str]) -> None:
    """The committed goldens are kubectl's answer today (accepted or not, and which objects);
    when this fails, run scripts/regenerate-kustomize-goldens and review the diff."""
    assert KUBECTL is not None
    kind, text = _script().build(KUBECTL, case)
    theirs = golden(case)
    made_by = (GOLDENS / "kubectl-version.txt").read_text("utf-8").strip().replace("\n", ", ")
    stale = f"goldens made by {made_by}: run scripts/regenerate-kustomize-goldens"
    assert (kind == "yaml") == (theirs is not None), f"{stale} ({text.strip()[:300]})"
    if theirs is not None:
        assert canonical(parse(text.encode())) == canonical(theirs), stale
