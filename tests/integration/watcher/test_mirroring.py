"""API edits in watched namespaces become ObjectEvents on their branch's stream (M1, M2, M10).

Each test drives the sandbox API double with the official client, runs the watcher in burst
mode (one pass, watches drained), and reads the branch's Redis stream as the branch worker
would.
"""

from __future__ import annotations

import base64
from typing import Any

import pyrage
import pytest
import redis

from services.watcher.encryption import Sealer
from shared.model.events import latest_managers
from shared.model.manifest import sanitise
from shared.model.sops import fingerprint, is_sealed, stored_fingerprint
from tests.integration.watcher.harness import (
    GROUP,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    mirror_setup,
    watch_rule,
)

pytestmark = pytest.mark.integration

GITREPOSITORIES = [{"apiGroups": ["source.toolkit.fluxcd.io"], "resources": ["gitrepositories"]}]


def test_configmap_create_update_delete_become_events_in_order(rig: Rig, repo_url: str) -> None:
    """M1, M2: each change is one event with the sanitised object and the latest managers.

    Watch event types map to operations as the upstream operator maps them
    (facts/upstream-gitops-reverser.md §1.2: ADDED→CREATE, MODIFIED→UPDATE, DELETED→DELETE).
    """
    uid = mirror_setup(rig, repo_url)
    c = rig.cluster
    created = c.configmap("team-a", "app", {"mode": "blue"})
    rig.burst()
    c.patch(
        "v1",
        "ConfigMap",
        "app",
        "team-a",
        {"metadata": {"labels": {"tier": "web"}}, "data": {"mode": "green"}},
    )
    updated = c.get("v1", "ConfigMap", "app", "team-a")
    c.delete("v1", "ConfigMap", "app", "team-a")
    rig.burst()

    events = rig.published(repo_url)
    assert [e.operation for e in events] == ["CREATE", "UPDATE", "DELETE"]
    assert {e.target.uid for e in events} == {uid}
    assert events[0].body == sanitise(created)
    assert events[0].managers == latest_managers(created["metadata"]["managedFields"])
    assert events[1].body == sanitise(updated)
    assert events[1].body is not None and events[1].body["data"] == {"mode": "green"}
    assert events[1].resource_version == updated["metadata"]["resourceVersion"]
    assert events[2].body is None
    oid = events[2].object_id
    assert (oid.group, oid.version, oid.resource, oid.kind, oid.namespace, oid.name) == (
        "",
        "v1",
        "configmaps",
        "ConfigMap",
        "team-a",
        "app",
    )
    assert events[2].uid == created["metadata"]["uid"]


def _gitrepository(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"url": "https://example.org/app.git", "interval": "5m", "ref": {"branch": "main"}},
    }


def test_custom_resource_is_mirrored_without_status(rig: Rig, repo_url: str) -> None:
    """M2: a custom resource keeps spec, drops status and server metadata.

    A status write is an API change (MODIFIED) that changes nothing Git holds: it is
    published as an UPDATE with the very same body, and the branch worker drops it because
    it produces the same bytes (M3).
    """
    mirror_setup(rig, repo_url, rules=GITREPOSITORIES)
    c = rig.cluster
    c.create(_gitrepository("app"))
    rig.burst()
    repo = c.resource("source.toolkit.fluxcd.io/v1", "GitRepository")
    repo.status.patch(
        name="app",
        namespace="team-a",
        content_type="application/merge-patch+json",
        body={
            "status": {
                "observedGeneration": 1,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Succeeded",
                        "message": "stored",
                        "lastTransitionTime": "2030-01-01T00:00:00Z",
                    }
                ],
            }
        },
    )
    rig.burst()

    events = rig.published(repo_url)
    assert [e.operation for e in events] == ["CREATE", "UPDATE"]
    first, second = events
    assert first.object_id.group == "source.toolkit.fluxcd.io"
    assert first.object_id.kind == "GitRepository"
    assert first.body is not None
    assert first.body["apiVersion"] == "source.toolkit.fluxcd.io/v1"
    assert first.body["spec"]["url"] == "https://example.org/app.git"
    assert "status" not in first.body
    assert set(first.body["metadata"]) == {"name", "namespace"}
    assert second.body == first.body
    assert second.resource_version != first.resource_version


def _all_values(client: redis.Redis, prefix: str) -> str:
    """Everything stored under ``prefix``, as one string to search."""
    parts: list[str] = []
    for key in client.scan_iter(f"{prefix}:*"):
        kind = client.type(key)
        if kind == "stream":
            parts.extend(str(fields) for _, fields in client.xrange(key))
        elif kind == "hash":
            parts.append(str(client.hgetall(key)))
        elif kind == "set":
            parts.append(str(client.smembers(key)))
        elif kind == "string":
            parts.append(str(client.get(key)))
    return "\n".join(parts)


def test_secret_is_published_as_sensitive_identity_without_data(rig: Rig, repo_url: str) -> None:
    """M10: a Secret reaches its branch as identity only (the worker refuses it); no byte of
    its data is stored anywhere in Redis (behaviour.md R5: no secret is stored in Redis)."""
    mirror_setup(rig, repo_url, rules=[{"apiGroups": [""], "resources": ["secrets"]}])
    password = "hunter2-do-not-leak"
    encoded = base64.b64encode(password.encode()).decode()
    rig.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": "db", "namespace": "team-a", "annotations": {"note": password}},
            "data": {"password": encoded},
        }
    )
    rig.burst()

    (event,) = rig.events(repo_url)
    assert event.sensitive
    assert event.operation == "CREATE"
    assert event.body == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "team-a"},
    }
    stored = _all_values(rig.redis, rig.prefix)
    assert "db" in stored  # the identity is there ...
    assert password not in stored and encoded not in stored  # ... the data is not


def test_only_namespaces_the_cluster_provider_admits_are_watched(rig: Rig, repo_url: str) -> None:
    """ClusterProvider accessFrom (behaviour.md §1): names or a matching selector admit; any
    other namespace is not watched, and its GitTarget says NotAdmitted."""
    c = rig.cluster
    for ns, labels in (("team-a", {}), ("team-b", {}), ("team-c", {"mirror": "yes"})):
        c.namespace(ns, labels)
        c.create(git_provider(ns, repo_url))
        c.create(git_target(ns))
        c.create(watch_rule(ns, [{"apiGroups": [""], "resources": ["configmaps"]}]))
        c.configmap(ns, f"cm-{ns}", {"ns": ns})
    c.create(
        cluster_provider(
            accessFrom={"names": ["team-a"], "selector": {"matchLabels": {"mirror": "yes"}}}
        )
    )
    rig.burst()

    mirrored = {e.object_id.namespace for e in rig.events(repo_url)}
    assert mirrored == {"team-a", "team-c"}
    refused = c.conditions("GitTarget", "target", "team-b")
    assert refused["Validated"]["status"] == "False"
    assert refused["Validated"]["reason"] == "NotAdmitted"
    uid_b = c.get(GROUP, "GitTarget", "target", "team-b")["metadata"]["uid"]
    assert not list(rig.redis.scan_iter(f"{rig.prefix}:watch:{uid_b}:*"))
    assert rig.config.target(uid_b) is None


def test_rule_operations_filter_what_is_published(rig: Rig, repo_url: str) -> None:
    """WatchRule ``operations`` (behaviour.md §1): only the listed changes are followed."""
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "operations": ["CREATE", "DELETE"]}]
    mirror_setup(rig, repo_url, rules=rules)
    c = rig.cluster
    c.configmap("team-a", "app", {"v": "1"})
    rig.burst()
    c.patch("v1", "ConfigMap", "app", "team-a", {"data": {"v": "2"}})
    c.delete("v1", "ConfigMap", "app", "team-a")
    rig.burst()

    assert [e.operation for e in rig.published(repo_url)] == ["CREATE", "DELETE"]


def test_a_secret_of_an_encrypting_target_is_published_sealed(rig: Rig, repo_url: str) -> None:
    """P3: with spec.encryption (recipients from a Secret in the GitTarget's namespace) the
    Secret is published as a SOPS document; Redis holds ciphertext only; its fingerprint is
    keyed from the cluster's fingerprint Secret, so another watcher process agrees on it; and
    a list without a cursor names the Secrets (D2), since sealed ones are in the folder."""
    identity = pyrage.x25519.Identity.generate()
    c = rig.cluster
    c.namespace("gitops-reverser")
    c.create(_secret("gitops-reverser", "gitops-reverser-sops-fingerprint", {"key": "k" * 32}))
    uid = mirror_setup(
        rig,
        repo_url,
        rules=[{"apiGroups": [""], "resources": ["secrets"]}],
        encryption={"age": {"recipientsSecretRef": {"name": "keys"}}},
        prune={"mode": "Always"},
    )
    c.create(_secret("team-a", "keys", {"recipients": f"# flux\n{identity.to_public()}\n"}))
    password = "hunter2-do-not-leak"
    encoded = base64.b64encode(password.encode()).decode()
    c.create(_secret("team-a", "db", {"password": password}))
    rig.burst()

    sealed = [e for e in rig.events(repo_url) if e.object_id.name == "db"]
    assert len(sealed) == 1 and sealed[0].sensitive and sealed[0].body is not None
    body = sealed[0].body
    assert is_sealed(body) and body["sops"]["age"][0]["recipient"] == str(identity.to_public())
    plain = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "team-a"},
        "data": {"password": encoded},
        "type": "Opaque",
    }
    key = Sealer(b"k" * 32).key_for(uid)
    assert stored_fingerprint(body) == fingerprint(plain, (str(identity.to_public()),), key)
    stored = _all_values(rig.redis, rig.prefix)
    assert password not in stored and encoded not in stored
    assert "ENC[AES256_GCM" in stored
    # D2 for sealed Secrets: they are in the folder, so a list without a cursor names them
    (listing,) = [x for x in rig.listings(repo_url) if x.resource.resource == "secrets"]
    assert listing.names == {"db", "keys"}


def _secret(ns: str, name: str, values: dict[str, str]) -> dict[str, Any]:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def test_the_watcher_creates_a_missing_fingerprint_secret_once(rig: Rig, repo_url: str) -> None:
    """Issue 24 §4: no fingerprint Secret (the chart renders none): the watcher's pass creates
    it with a random key and keys the fingerprints from it; the next pass keeps it."""
    identity = pyrage.x25519.Identity.generate()
    c = rig.cluster
    c.namespace("gitops-reverser")
    uid = mirror_setup(
        rig,
        repo_url,
        rules=[{"apiGroups": [""], "resources": ["secrets"]}],
        encryption={"age": {"recipients": [str(identity.to_public())]}},
    )
    c.create(_secret("team-a", "db", {"password": "pw"}))
    rig.burst()
    made = c.get("v1", "Secret", "gitops-reverser-sops-fingerprint", "gitops-reverser")
    key = base64.b64decode(made["data"]["key"])
    assert len(key) == 32
    (sealed,) = [e for e in rig.events(repo_url) if e.object_id.name == "db"]
    assert sealed.body is not None
    plain = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "team-a"},
        "data": {"password": base64.b64encode(b"pw").decode()},
        "type": "Opaque",
    }
    expected = fingerprint(plain, (str(identity.to_public()),), Sealer(key).key_for(uid))
    assert stored_fingerprint(sealed.body) == expected
    rig.burst()
    again = c.get("v1", "Secret", "gitops-reverser-sops-fingerprint", "gitops-reverser")
    assert again["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
