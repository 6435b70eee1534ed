"""The only Kubernetes client code: clients per ClusterProvider, discovery, watches, status.

Nothing else imports ``kubernetes``; every API failure leaves this package classified as
``shared.kube.errors.KubePermanent``, ``KubeTemporary`` or ``Expired``.
"""
