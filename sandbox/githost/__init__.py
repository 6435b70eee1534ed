"""A Git host for tests: bare repositories over smart HTTP that send signed push webhooks.

Real ``git`` clones, fetches and pushes through ``git http-backend``; every push that moves a
ref sends the configured webhooks exactly as GitHub, Gitea, Forgejo or GitLab would (headers,
event names, delivery ids, signatures, payloads), and every delivery is recorded. See
``host.GitHost`` for the API and ``../shared/facts/webhooks-git-libs.md`` §1.1-1.4, §2.3 for the
behaviour it follows.
"""

from sandbox.githost.hooks import Delivery, Hook
from sandbox.githost.host import GitHost

__all__ = ["Delivery", "GitHost", "Hook"]
