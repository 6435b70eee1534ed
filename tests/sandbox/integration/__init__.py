"""Integration tests of the sandbox stand-ins (Kubernetes API double, git host)."""
