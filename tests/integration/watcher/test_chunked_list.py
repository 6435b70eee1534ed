"""The watcher lists in chunks (``limit``/``continue``) and lists again when a chunk's token
expired (M1).

"Clients may request a maximum number of results with ``limit``; when more exist the response
carries ``continue`` ... if the continue token has expired, the server answers 410 Gone and
the client starts the list again" (kubernetes.io/docs/reference/using-api/api-concepts/
#retrieving-large-results-sets-in-chunks, paraphrased). The sandbox double serves chunks that
way (tests/sandbox/integration/test_kube_paging.py); its history is bounded, so a small
``history`` expires a token on demand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from services.watcher import channel
from shared.kube.api import KubeClient
from tests.integration.watcher.harness import Cluster, Rig, mirror_setup, sandbox_cluster

pytestmark = pytest.mark.integration

CHUNK = 3
OBJECTS = 10
HISTORY = 12


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The watcher asks for CHUNK objects a request; records how many items each list answer
    of the API held."""
    monkeypatch.setattr(channel, "LIST_CHUNK", CHUNK)
    sizes: list[int] = []
    original = KubeClient.request

    def recording(self: KubeClient, method: str, path: str, body: Any = None, **params: Any) -> Any:
        answer = original(self, method, path, body, **params)
        if method == "get" and path.endswith("/configmaps"):
            sizes.append(len(answer.get("items") or []))
        return answer

    monkeypatch.setattr(KubeClient, "request", recording)
    return sizes


def test_a_namespace_larger_than_one_chunk_is_mirrored_completely(
    rig: Rig, repo_url: str, answers: list[int]
) -> None:
    """M1: every object of a namespace four chunks long is published, once; no list answer
    held more than a chunk (the whole list never sat in the watcher at once)."""
    mirror_setup(rig, repo_url)
    for i in range(OBJECTS):
        rig.cluster.configmap("team-a", f"cm{i:02d}", {"n": str(i)})
    rig.burst()
    names = sorted(e.object_id.name for e in rig.published(repo_url))
    assert names == [f"cm{i:02d}" for i in range(OBJECTS)]
    assert answers and max(answers) <= CHUNK
    assert sum(answers) == OBJECTS  # four chunks: 3 + 3 + 3 + 1
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="nocursor") == 1


@pytest.fixture
def forgetful(tmp_path: Path) -> Iterator[Cluster]:
    with sandbox_cluster(tmp_path, history=HISTORY) as running:
        yield running


@pytest.fixture
def short_rig(forgetful: Cluster, redis_client: redis.Redis, key_prefix: str) -> Rig:
    """A rig whose API server keeps only HISTORY events."""
    return Rig(forgetful, redis_client, key_prefix)


def test_a_chunk_token_that_expired_lists_again_from_the_start(
    short_rig: Rig, repo_url: str, answers: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """M1: after the first chunk, the API's history moves past the list's snapshot (and an
    object is added): the next chunk is 410 Expired, and the watcher lists again from the
    start, a new snapshot, so the object added meanwhile is mirrored too and nothing is
    missed."""
    rig = short_rig
    mirror_setup(rig, repo_url)
    for i in range(OBJECTS):
        rig.cluster.configmap("team-a", f"cm{i:02d}", {"n": str(i)})
    pages = KubeClient.pages
    meddled: list[bool] = []

    def meddling(self: KubeClient, *args: Any) -> Iterator[Any]:
        for page in pages(self, *args):
            yield page
            if not meddled:  # once, after the very first chunk
                meddled.append(True)
                rig.cluster.configmap("team-a", "late", {"n": "late"})
                rig.cluster.configmap("default", "noise", {"i": "0"})
                for i in range(HISTORY + 1):
                    body = {"data": {"i": str(i)}}
                    rig.cluster.patch("v1", "ConfigMap", "noise", "default", body)

    monkeypatch.setattr(KubeClient, "pages", meddling)
    rig.burst()
    assert meddled
    names = {e.object_id.name for e in rig.published(repo_url)}
    assert names == {f"cm{i:02d}" for i in range(OBJECTS)} | {"late"}
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="continue-expired") == 1
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="nocursor") == 1
