"""The bounds of one render (N4): a "diamond" of kustomizations that each list both folders of
the next level was rendered again on every path, in exponential time, holding a branch's
thread for hours. Each directory is now rendered once per render (``render._build``) and its
objects copied where it is listed again; kustomizations nest at most ``MAX_DEPTH`` deep; and a
render that would visit more kustomizations and entries, and make more objects, than
``MAX_WORK`` in all is refused."""

from __future__ import annotations

from shared.kustomize.refusals import Unsupported

#: Deepest nesting of kustomizations a render follows (a deeper chain is refused, not recursed).
MAX_DEPTH = 40
#: Most work one render may do: kustomizations visited, entries read and objects made (copies
#: of a directory listed again included). A folder of 10,000 objects listed one file each
#: needs about 20,000; the probe's 49-file diamond needed 2^25 before directories were
#: rendered once.
MAX_WORK = 50_000


def check_depth(file: str, depth: int) -> None:
    """Refuse a kustomization listed ``depth`` kustomizations down, past ``MAX_DEPTH``."""
    if depth >= MAX_DEPTH:
        raise Unsupported(file, "resources", f"kustomizations nested over {MAX_DEPTH} deep")


def check_work(file: str, work: int) -> None:
    """Refuse a render once its ``work`` is past ``MAX_WORK``."""
    if work > MAX_WORK:
        raise Unsupported(
            file, "render size", f"the render needs more than {MAX_WORK} steps; split it up"
        )
