"""The refusals a branch's owner sets and lifts on its GitTargets (M10, D1, P6, T4, C1): what a
user sees as ``GitPathAccepted``, and the applier told when one is set or lifted.

Only the owner sets the folder and signing refusals, so it remembers which it set or lifted
since it took the branch and skips the round trips that would change nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.branch_worker import metrics
from services.branch_worker.applying import ApplierDesk
from services.branch_worker.signing import SIGNING_KEY_INVALID
from services.branch_worker.writer import Applied, key_of
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.render_fidelity import RENDER_DOES_NOT_MATCH_LIVE, RENDER_NOT_VERIFIABLE
from shared.store.config import ConfigStore

log = logging.getLogger("services.branch_worker.branch")  # the owner's log, as before

#: The reason a GitTarget shows while its GitProvider's commit template cannot be used.
BAD_TEMPLATE = "InvalidCommitTemplate"
#: The commit did not hold a write made for the GitTarget (D1, issue 11): shown on it until a
#: commit of its folder holds what was written.
WRITE_NOT_HELD = "WriteNotHeld"
#: The render-fidelity gate's refusals (issue 27): each stands for one object, and is lifted
#: when that object is next accepted (written, or found as Git holds it) or deleted.
RENDER_REASONS = frozenset({RENDER_DOES_NOT_MATCH_LIVE, RENDER_NOT_VERIFIABLE})
#: Refusals kept per object rather than for the folder.
OBJECT_REASONS = frozenset({"SensitiveResource", *RENDER_REASONS})


class Conditions:
    """One owner's refusal bookkeeping for the GitTargets of its branch."""

    def __init__(
        self,
        branch: BranchKey,
        configs: ConfigStore,
        desk: ApplierDesk,
        refused: Callable[[TargetConfig, ObjectEvent], None] | None = None,
    ) -> None:
        self._branch = branch
        self._configs = configs
        self._desk = desk
        #: Told of every refused edit (P11: ``onRefusal: PushEmptyCommit`` owes an empty commit).
        self._on_refused = refused
        #: GitTargets whose folder refusal this owner has lifted since it took the branch: only
        #: the owner sets one, so lifting it again on every write is a wasted round trip.
        self._folder_ok: set[GitTargetUid] = set()
        #: GitTargets whose ``signing`` refusal this owner set: lifted at their next commit.
        self._signing_refused: set[GitTargetUid] = set()
        #: Per GitTarget, the objects with a standing render refusal (read once per owner).
        self._render_refused: dict[GitTargetUid, set[str]] = {}

    def restart(self) -> None:
        """The owner (re)took the branch: another owner may have set refusals meanwhile."""
        self._folder_ok.clear()
        self._render_refused.clear()

    def applied(self, target: TargetConfig, event: ObjectEvent, applied: Applied) -> None:
        """Record what applying ``event`` came to: its refusal set, or the ones it lifts."""
        key = "object:" + "/".join(key_of(event))
        if applied.kind == "refused":
            self._refused(target, applied, key)
            if self._on_refused is not None:
                self._on_refused(target, event)
            return
        if target.uid not in self._folder_ok:
            self._configs.clear_refusal(target.uid, key="folder")
            self._folder_ok.add(target.uid)
        rendered = self._rendered(target.uid)
        if event.operation == "DELETE" or event.sensitive or key in rendered:
            self._configs.clear_refusal(target.uid, key=key)  # P3: a sealed Secret is written
            rendered.discard(key)
        if target.applier and self._configs.refusal(target.uid) is None:
            self._desk.on_recovery(target)

    def _rendered(self, uid: GitTargetUid) -> set[str]:
        """The GitTarget's objects with a standing render refusal."""
        if uid not in self._render_refused:
            standing = self._configs.refusals(uid)
            self._render_refused[uid] = {
                k for k, v in standing.items() if v.get("reason") in RENDER_REASONS
            }
        return self._render_refused[uid]

    def _refused(self, target: TargetConfig, applied: Applied, key: str) -> None:
        metrics.REFUSALS.labels(applied.reason).inc()
        slot = key if applied.reason in OBJECT_REASONS else "folder"
        if applied.reason in RENDER_REASONS:
            self._rendered(target.uid).add(key)
        self._configs.set_refusal(target.uid, applied.reason, applied.message, key=slot)
        if slot == "folder":
            self._folder_ok.discard(target.uid)
        self._desk.on_refusal(target)
        log.warning(
            "refused: %s",
            applied.message,
            extra={
                "branch": self._branch,
                "gittarget": f"{target.namespace}/{target.name}",
                "reason": applied.reason,
            },
        )

    def template(self, uid: GitTargetUid, problem: str) -> None:
        """T4: why the GitProvider's template cannot be used ("" once it can) is shown on the
        GitTarget; its commits are made with the built-in wording meanwhile (C1)."""
        if problem:
            self._configs.set_refusal(uid, BAD_TEMPLATE, problem, key="template")
        elif "template" in self._configs.refusals(uid):
            self._configs.clear_refusal(uid, key="template")

    def not_held(self, uid: GitTargetUid, problem: str) -> None:
        """D1: a commit did not hold a write made for the GitTarget."""
        self._configs.set_refusal(uid, WRITE_NOT_HELD, problem, key="held")
        metrics.REFUSALS.labels(WRITE_NOT_HELD).inc()

    def committed(self, target: TargetConfig) -> None:
        """A commit of the GitTarget's folder held its writes (signed, when it asks for it):
        the held and signing refusals are lifted."""
        self._configs.clear_refusal(target.uid, key="held")
        if target.uid in self._signing_refused or (
            target.signing_secret and "signing" in self._configs.refusals(target.uid)
        ):
            self._configs.clear_refusal(target.uid, key="signing")
            self._signing_refused.discard(target.uid)

    def signing_held(self, uid: GitTargetUid, message: str) -> None:
        """P6, T4: the GitTarget's writes are held because its commits cannot be signed."""
        self._configs.set_refusal(uid, SIGNING_KEY_INVALID, message, key="signing")
        self._signing_refused.add(uid)
        metrics.REFUSALS.labels(SIGNING_KEY_INVALID).inc()

    def withdrawn_for_key(self, uid: GitTargetUid, target: TargetConfig | None) -> bool:
        """Whether a GitTarget whose settings are ``target`` is held for its signing key (one
        withdrawn by an older watcher, settings gone, is told by its standing ``signing``
        refusal: withdrawal keeps refusals, deletion does not)."""
        if target is not None:
            return target.key_held
        return "signing" in self._configs.refusals(uid)
