"""``python -m tests.e2e.window_off_worker``: a branch-worker process without the apply window.

The product's branch-worker process (``services.branch_worker.__main__.main``) built with
``apply_window=False``: W1's guard mirrors every event as it comes. The e2e counterfactuals
(``test_apply_window_e2e``, ``test_argocd_apply_window_e2e``) start it in place of the
Procfile's ``branch_worker`` (``WINDOW_OFF``) to show that the race their first test survives
is real: without the window the edit is lost. The product has no switch for it.
"""

from __future__ import annotations

import sys

from sandbox.processes import procfile
from services.branch_worker.__main__ import main

#: The Procfile's commands with this branch-worker process in place of the product's.
WINDOW_OFF = {**procfile(), "branch_worker": f"{sys.executable} -m tests.e2e.window_off_worker"}

if __name__ == "__main__":
    sys.exit(main(apply_window=False))
