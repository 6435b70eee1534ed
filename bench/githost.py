"""Measure the sandbox git host: a clone plus a push of one small commit, median of N runs.

Why: every integration and e2e test pays this round trip, so its cost bounds how many git
scenarios the suites can afford. Run: ``.venv/bin/python bench/githost.py [--runs 20]``.
Each run clones a fresh copy, commits one small file and pushes it; with ``--hook`` the
repository also has a GitHub webhook to a local receiver and the run waits for the delivery.
"""

from __future__ import annotations

import argparse
import http.server
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.report import Section, render
from sandbox.githost import GitHost, Hook
from sandbox.githost.outside import OutsideClone

RUN_TIMEOUT_SECONDS = 30  # bounds each git command, so the whole bench is bounded


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def one_run(host: GitHost, url: str, scratch: Path, i: int, hooked: bool) -> tuple[float, ...]:
    work = scratch / f"clone-{i}"
    started = time.perf_counter()
    clone = OutsideClone(url, work, timeout=RUN_TIMEOUT_SECONDS)
    cloned = time.perf_counter()
    clone.write({f"file-{i}.txt": f"change {i}\n"})
    clone.git("add", ".")
    clone.git("commit", "--quiet", "-m", f"change {i}")
    before_push = time.perf_counter()
    clone.push()
    pushed = time.perf_counter()
    if hooked:
        host.wait_for_deliveries(i + 1, RUN_TIMEOUT_SECONDS, repo="bench")
    delivered = time.perf_counter()
    return cloned - started, pushed - before_push, delivered - pushed


def measure(runs: int, hooked: bool) -> list[tuple[float, ...]]:
    """``runs`` clone+push rounds, optionally with a GitHub webhook to a local receiver."""
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        host = GitHost(scratch / "host")
        host.start()
        url = host.create_repo("bench", files={"README.md": b"bench\n", "app.yaml": b"a: 1\n"})
        if hooked:
            host.add_hook("bench", Hook(f"http://127.0.0.1:{receiver.server_port}/", "github"))
        results = [one_run(host, url, scratch, i, hooked) for i in range(runs)]
        host.stop()
    receiver.shutdown()
    return results


def bench(runs: int = 20) -> Section:
    """Median clone, push and clone+push times, without and with a webhook."""
    section = Section("Sandbox git host: clone and push", "make bench  (python -m bench githost)")
    for hooked in (False, True):
        results = measure(runs, hooked)
        clone, push, deliver = (statistics.median(col) * 1000 for col in zip(*results, strict=True))
        total = statistics.median((c + p) * 1000 for c, p, _ in results)
        label = "with a GitHub webhook" if hooked else "no webhook"
        section.add(f"clone, {label}", clone, "ms", f"median of {runs}")
        section.add(f"push of one small commit, {label}", push, "ms", f"median of {runs}")
        section.add(f"clone + push, {label}", total, "ms", f"median of {runs}")
        if hooked:
            section.add("push exit to delivery recorded", deliver, "ms", f"median of {runs}")
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(render([bench(args.runs)]))


if __name__ == "__main__":
    main()
