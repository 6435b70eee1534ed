"""How fast the applier doubles apply: a hold before the apply, a gap between objects, a gate.

The real controllers do not answer in milliseconds: "An apply runs a few seconds after its
stamp" (the seed, ../shared/seed/apply-trigger-pr.txt), while the source is fetched and the
folder built, and kustomize-controller then applies object by object, a server-side dry-run and
(for a drifted object) an apply each (facts: appliers.md F3, ``ApplyAllStaged``). An API edit
made in those seconds is the apply window's race (W1), so the doubles can be slowed down to let
a test put an edit *inside* an apply:

- ``before_apply_s``: a pause between the request being seen (the reconcile starting) and the
  first object applied;
- ``between_objects_s``: a pause between two objects of one apply;
- ``gate``: an event the apply waits on before its first object (open by default); a test
  closes it to hold every apply, waits for ``holding``, edits, and opens it again. A gate a
  test holds is the way to order events; the pauses only make the defaults realistic.

Defaults (``FLUX_DEFAULT``, ``ARGOCD_DEFAULT``) are pinned to what the facts say, each by a
sandbox test. Where the facts give no number, the default is 0 and says so. Tests that need
speed pass ``Pacing()`` (all zero) explicitly.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

#: The seed: "An apply runs a few seconds after its stamp". The double takes the low end of
#: "a few" so the demo stays short; it is a pause, not a measurement.
FLUX_BEFORE_APPLY_S = 2.0
#: The facts give no per-object time for kustomize-controller (F3 names the two calls per
#: object, not their latency), so no gap by default; tests that need one set it.
FLUX_BETWEEN_OBJECTS_S = 0.0
#: Argo CD starts an operation as soon as its informer sees ``operation`` set (facts A2: the
#: UpdateFunc enqueues the app whenever ``operation != nil``, and the operation queue re-reads
#: it at once); the facts give no render or apply latency, so no pause and no gap.
ARGOCD_BEFORE_APPLY_S = 0.0
ARGOCD_BETWEEN_OBJECTS_S = 0.0
#: How often a held apply looks whether it should stop instead (the double is stopping).
GATE_POLL_S = 0.05


class Stopping(Exception):
    """The double is stopping while an apply waits: the apply is abandoned."""


@dataclass
class Pacing:
    """How slowly an apply goes: pauses in seconds and a gate (see the module docstring)."""

    before_apply_s: float = 0.0
    between_objects_s: float = 0.0
    gate: threading.Event = field(default_factory=threading.Event)
    #: Set while an apply waits at the closed gate (a test awaits it before it edits).
    holding: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.gate.set()

    def hold(self, stop: threading.Event) -> None:
        """Before the first object: wait for the gate, then pause ``before_apply_s``."""
        if not self.gate.is_set():
            self.holding.set()
            try:
                while not self.gate.wait(GATE_POLL_S):
                    if stop.is_set():
                        raise Stopping
            finally:
                self.holding.clear()
        self._pause(self.before_apply_s, stop)

    def between(self, stop: threading.Event) -> None:
        """Between two objects of one apply: pause ``between_objects_s``."""
        self._pause(self.between_objects_s, stop)

    @staticmethod
    def _pause(seconds: float, stop: threading.Event) -> None:
        if seconds > 0 and stop.wait(seconds):
            raise Stopping


def flux_default() -> Pacing:
    """The Flux doubles' pacing unless a caller gives one (see the constants)."""
    return Pacing(FLUX_BEFORE_APPLY_S, FLUX_BETWEEN_OBJECTS_S)


def argocd_default() -> Pacing:
    """The Argo CD double's pacing unless a caller gives one (see the constants)."""
    return Pacing(ARGOCD_BEFORE_APPLY_S, ARGOCD_BETWEEN_OBJECTS_S)
