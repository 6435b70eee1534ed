"""Makes an interpreter see only the runtime dependencies, as the image installs them.

Outside check 7 (issue 23).

Python imports ``sitecustomize`` at start-up from ``sys.path``; the console-script test
(``tests/e2e/test_console_scripts_e2e.py``) puts this folder on ``PYTHONPATH`` and names, in
``TEST_RUNTIME_ONLY_NOT_INSTALLED``, the top-level modules that only the development extras
install. Importing one of them then fails as it would in the image, so a process that needs a
package nobody declared (rq-dashboard's ``six`` once) fails here even though the development
environment happens to have it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

_NOT_INSTALLED = frozenset(
    name for name in os.environ.get("TEST_RUNTIME_ONLY_NOT_INSTALLED", "").split(",") if name
)


class _NotInstalled(MetaPathFinder):
    """Answers every import of a module outside the runtime dependencies as not found."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] in _NOT_INSTALLED:
            message = f"No module named {fullname!r} (not a runtime dependency)"
            raise ModuleNotFoundError(message, name=fullname)
        return None


sys.meta_path.insert(0, _NotInstalled())
