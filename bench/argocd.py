"""How soon Argo CD is asked: from an outside push to the Application's operation being set.

The same run as ``bench.apply_trigger``'s (a), with an Argo CD applier instead of Flux: the
product's processes (watcher, branch worker, dispatcher, receiver) run against the sandbox with
its Argo CD double, configured as docs/argocd.md describes: a GitProvider with a GitHub
receiver (the sandbox Git host sends it a signed webhook on every push), a GitTarget whose
applier is an Application in the GitTarget's namespace (automated sync off with ``prune: true``
kept, ``directory.recurse: true``). The steady tick is 1h, so an outside push is found through
its webhook alone. "The operation being set" is the moment a watch on the Application first
shows ``operation`` carrying the new request's token (``bench.stamps.operation_token``).

Each sample starts from a settled system (the previous request Delivered, Argo CD's operation
for it Succeeded at its commit, nothing owed, the branch quiet) and, after a random pause, pushes
a commit with real git: from the push (the bare repository's ref moving) to the operation; from
the push to the receiver storing the notice; and from that notice to the operation, which is
the figure to read beside Flux's "(a) notice stored to ForeignCommit stamp" of the apply-trigger
section. Rows marked ".." split it at rq's record of the request's job.

Run alone: ``scripts/with-redis .venv/bin/python -m bench argocd``; beside Flux's figure from
the same machine: ``scripts/with-redis .venv/bin/python -m bench apply_trigger argocd``.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from bench.apply_trigger import DEPHASE_S, DEPHASE_SEED, Samples, add_rows, outside_push
from bench.flux_rig import Rig, configured, webhook_path
from bench.product import (
    BRANCH,
    FOLDER,
    GROUP,
    NS,
    SETUP_TIMEOUT_S,
    SLOW_POLL_S,
    TOKEN,
    Repo,
    configure,
    provider,
    running,
    wait_for,
)
from bench.report import Section
from bench.stamps import Target, operation_token, watching
from sandbox import manifests as m
from shared.model.config import ApplierRef
from shared.store.keys import Keys
from tests.e2e.system import System

#: Outside pushes timed; each waits for Argo CD to finish the sync it was asked for.
PUSHES = 15
APPLICATION = Target("argoproj.io", "v1alpha1", NS, "applications", "apps")


class ArgoRig(Rig):
    """``Rig`` for a GitTarget whose applier is the Application ``bench/apps``."""

    applier = ApplierRef("Application", NS, "apps", "default")

    def applied(self, commit: str) -> bool:
        """Argo CD's last operation synced ``commit`` and succeeded (A2: ``syncResult``)."""
        t = APPLICATION
        app = self.system.get(t.group, t.version, t.namespace, t.plural, t.name)
        state = (app.get("status") or {}).get("operationState") or {}
        revision = (state.get("syncResult") or {}).get("revision")
        return state.get("phase") == "Succeeded" and revision == commit


def set_up(system: System) -> Repo:
    """The objects of docs/argocd.md, the folder in Git before the Application compares it,
    and the Git host's webhook pointed at the receiver."""
    readme = {"README.md": b"bench\n", f"{FOLDER}/README.md": b"The GitTarget's folder.\n"}
    url = system.repo("argo", files=readme)
    repo = Repo("argo", url, system.bare("argo"), Keys(system.env["GITOPS_REVERSER_KEY_PREFIX"]))
    applier = m.application_applier(NS, "apps")
    spec = {"providerRef": {"name": "bench"}, "branch": BRANCH, "path": FOLDER, "applier": applier}
    target = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "GitTarget",
        "metadata": {"name": "apps", "namespace": NS},
        "spec": spec,
    }
    configure(system, [provider(url, "0s", receiver=True), target])
    system.create(m.application(NS, "apps", url, FOLDER, NS))
    path = wait_for("the receiver's webhook path", lambda: webhook_path(system), SETUP_TIMEOUT_S)
    system.hook(repo.name, path, "github", "json", TOKEN)
    wait_for("ApplierConfigured=True", lambda: configured(system), SETUP_TIMEOUT_S, SLOW_POLL_S)
    return repo


def _measure(scratch: Path) -> Samples:
    samples = Samples()
    with running(scratch / "system", steady_tick="1h") as system:
        repo = set_up(system)
        with watching(system.api, APPLICATION, operation_token) as operations:
            rig = ArgoRig(system, repo, operations, scratch)
            rig.wait_quiet()  # a worker owns the branch: the push below is foreign to it
            outside_push(rig, -1, 0.0, Samples())  # warm-up: the first sync, not timed
            pauses = random.Random(DEPHASE_SEED)
            for i in range(PUSHES):
                outside_push(rig, i, pauses.uniform(0, DEPHASE_S), samples)
    return samples


#: (sample key of ``outside_push``, what it measures here, whether its p99 is reported too).
ROWS = (
    ("push_to_stamp", "(c) outside push to the Application's operation set", True),
    ("push_to_notice", "(c) outside push to notice stored by the receiver", True),
    ("notice_to_stamp", "(c) notice stored to the Application's operation set", True),
    ("a_to_enqueued", "(c) .. notice stored to request enqueued (branch worker)", False),
    ("a_enqueued_to_started", "(c) .. enqueued to started (dispatcher)", False),
    ("a_started_to_stamp", "(c) .. started to operation seen (attempt's checks, update)", False),
)


def bench() -> Section:
    """Measure (c) in one run of the whole product with the Argo CD double."""
    section = Section(
        "Apply trigger, Argo CD: from a notice to the Application's operation",
        "scripts/with-redis .venv/bin/python -m bench argocd",
    )
    with tempfile.TemporaryDirectory() as scratch:
        samples = _measure(Path(scratch))
    outcomes = add_rows(section, samples, ROWS)
    section.notes.append(
        f"An Application with automated sync off (docs/argocd.md), steady tick 1h; GitHub JSON "
        f"webhooks from the sandbox Git host. Requests recorded in the ledger: {outcomes}. "
        "The operation is seen through a watch on the Application (the first version whose "
        "operation carries the request's token); each sample starts once the previous request "
        "was Delivered, Argo CD synced its commit and the branch was quiet, after a random "
        f"pause of up to {DEPHASE_S:.0f}s. For Flux, the same figure is the apply-trigger "
        "section's '(a) notice stored to ForeignCommit stamp'."
    )
    return section
