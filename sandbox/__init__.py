"""Local stand-ins for a cluster: a Kubernetes API server double, a Git host, and appliers.

The product is tested against these through the same clients it uses in production (the
official ``kubernetes`` client over HTTP, real ``git`` over smart HTTP). Each behaviour a
stand-in has is pinned by a test to a fact in ``../shared/facts``.
"""
