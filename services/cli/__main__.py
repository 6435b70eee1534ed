"""``python -m services.cli``: the ``gitops-reverser`` command (docs/cli.md)."""

import sys

from services.cli.app import main

if __name__ == "__main__":  # importing the module (every module is imported by a test) runs nothing
    sys.exit(main())
