"""``gitops-reverser``: the command an operator runs against an install, as ``flux`` is.

It reads the cluster with the person's kubeconfig (``shared.kube.userconfig``) and, where a
command needs what only Redis holds (what an applier is owed, the last push, the last apply
request), finds the install's Redis URL and key prefix in the cluster (``install``) unless
``--redis-url``/``--key-prefix`` say otherwise. It is a tool, not a process: it reaches
Kubernetes, Redis and git only through ``shared.kube``, ``shared.store`` and ``shared.git``,
and reuses the branch worker's own report (``inspect``) and folder reading (``analyze``)
instead of a copy of either. Subcommands: docs/cli.md.
"""
