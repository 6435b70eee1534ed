"""Code every gitops-reverser process shares: records, pure decisions and the adapters.

Layers (enforced by import-linter): ``decide`` is pure; only ``store`` talks to Redis, only
``kube`` to Kubernetes, only ``git`` to git.
"""
