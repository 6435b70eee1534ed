"""``python -m bench [NAME ...]``: run the benchmarks and write docs/benchmarks.md.

Each benchmark module has ``bench() -> Section``; all of them are bounded in count and time and
send traffic only to servers they start on the loopback interface.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from bench.report import Section, render, write

BENCHMARKS = (
    "kube_api",
    "githost",
    "mirror",
    "redis_memory",
    "receiver",
    "apply_trigger",
    "argocd",
    "snapshot",
    "many_targets",
    "takeover",
    "writer",
    "attribution_join",
    "replicas",
)
PAGE = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def main(argv: list[str] | None = None) -> int:
    """Run the named benchmarks (default: all) and write the page."""
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("names", nargs="*", default=list(BENCHMARKS))
    parser.add_argument("--out", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    sections: list[Section] = []
    for name in args.names:
        module = importlib.import_module(f"bench.{name}")
        print(f"bench: {name} ...", flush=True)
        sections.append(module.bench())
    write(sections, args.out)
    print(render(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
