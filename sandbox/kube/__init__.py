"""A Kubernetes API server double, served over HTTP for the official client and kubectl.

Start one with ``sandbox.kube.server.KubeApiServer``; everything else in this package is the
machinery behind it (kinds, store, handlers, watch, access) and the pure modules it calls
(``schema``: CRD validation, ``patching``: patch types, ``managed``: managedFields).
"""
