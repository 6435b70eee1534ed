"""P3 in the watcher: a GitTarget with ``spec.encryption`` has its core Secrets published
sealed (ciphertext only, so nothing secret reaches Redis); other sensitive kinds stay refused
(sops encrypts ``data``/``stringData`` only); recipients come from the list and from a Secret in
the GitTarget's own namespace; fingerprint keys differ per GitTarget."""

from __future__ import annotations

import base64
from typing import Any

import pyrage

from services.watcher.emit import object_event
from services.watcher.encryption import Sealer, with_recipients
from shared.decide.targets import INVALID_ENCRYPTION, Surroundings, validate
from shared.decide.watches import ServedTarget, watch_spec
from shared.model.crds import GitTargetView, parse_git_target
from shared.model.events import OPERATIONS, ObjectEvent
from shared.model.ids import BranchKey
from shared.model.resources import ApiResource
from shared.model.sops import is_sealed, stored_fingerprint
from tests.unit.decide.test_targets import CLUSTER, PROVIDER

SECRETS = ApiResource("", "v1", "secrets", "Secret", True)
CR_SECRETS = ApiResource("example.com", "v1", "secrets", "Secret", True)
RECIPIENT = str(pyrage.x25519.Identity.generate().to_public())
OTHER = str(pyrage.x25519.Identity.generate().to_public())
PLAIN = "c3VwZXItc2VjcmV0"


def _target(encryption: dict[str, Any] | None) -> GitTargetView:
    spec: dict[str, Any] = {"providerRef": {"name": "p"}, "branch": "main", "path": "x"}
    if encryption is not None:
        spec["encryption"] = encryption
    return parse_git_target(
        {"metadata": {"namespace": "t3", "name": "t", "uid": "u"}, "spec": spec}
    )


def _event(target: GitTargetView, resource: ApiResource, sealer: Sealer | None) -> ObjectEvent:
    spec = watch_spec(ServedTarget(target, BranchKey("bk")), resource, frozenset(OPERATIONS))
    obj = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": "db", "namespace": "t3", "uid": "o", "resourceVersion": "9"},
        "data": {"password": PLAIN},
        "type": "Opaque",
    }
    return object_event(spec, "UPDATE", obj, 1.0, sealer)


class Reader:
    """The one CrdReader call these functions make."""

    def __init__(self, secrets: dict[tuple[str, str], dict[str, bytes]]) -> None:
        self.secrets = secrets
        self.asked: list[tuple[str, str]] = []

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes] | None:
        self.asked.append((namespace, name))
        return self.secrets.get((namespace, name))


def test_a_secret_of_an_encrypting_target_is_published_sealed() -> None:
    """P3: the event body is a SOPS document; the plaintext is in no field of the event."""
    event = _event(_target({"age": {"recipients": [RECIPIENT]}}), SECRETS, Sealer(b"m"))
    assert event.sensitive and event.body is not None and is_sealed(event.body)
    assert PLAIN not in str(event.to_fields())
    assert event.body["metadata"] == {"name": "db", "namespace": "t3"}  # sanitised (M2)


def test_without_encryption_or_for_other_kinds_only_the_identity_travels() -> None:
    """M10 stays: no spec.encryption, or a Secret-named CR (not what sops encrypts)."""
    plain = _event(_target(None), SECRETS, Sealer(b"m"))
    assert plain.body is not None and "data" not in plain.body
    custom = _event(_target({"age": {"recipients": [RECIPIENT]}}), CR_SECRETS, Sealer(b"m"))
    assert custom.body is not None and "data" not in custom.body and not is_sealed(custom.body)


def test_fingerprints_are_stable_per_target_and_differ_between_targets() -> None:
    """The same Secret sealed twice has one fingerprint; another GitTarget's key differs."""
    sealer = Sealer(b"cluster key")
    target = _target({"age": {"recipients": [RECIPIENT]}})
    first, again = _event(target, SECRETS, sealer), _event(target, SECRETS, sealer)
    assert first.body is not None and again.body is not None
    assert stored_fingerprint(first.body) == stored_fingerprint(again.body)
    assert first.body["data"] != again.body["data"]
    assert sealer.key_for("u") != sealer.key_for("other-uid")
    assert Sealer(b"another cluster key").key_for("u") != sealer.key_for("u")


def test_recipients_are_read_from_the_secret_in_the_targets_namespace() -> None:
    """T1: the recipients Secret is read in the GitTarget's namespace and merged with the list."""
    target = _target({"age": {"recipients": [RECIPIENT], "recipientsSecretRef": {"name": "keys"}}})
    reader = Reader({("t3", "keys"): {"recipients": f"# ops\n{OTHER}\n".encode()}})
    (resolved,) = with_recipients([target], reader)  # type: ignore[arg-type]
    assert reader.asked == [("t3", "keys")]
    assert resolved.encryption is not None
    assert resolved.encryption.recipients == tuple(sorted((RECIPIENT, OTHER)))


def test_a_missing_or_bad_recipients_secret_invalidates_the_target() -> None:
    """A condition the user sees (Validated=False InvalidEncryption), not a silent refusal."""
    target = _target({"age": {"recipientsSecretRef": {"name": "keys", "key": "age"}}})
    for secrets, words in (
        ({}, "not found"),
        ({("t3", "keys"): {"recipients": b"x"}}, "has no key 'age'"),
        ({("t3", "keys"): {"age": b"AGE-SECRET-KEY-1QQ"}}, "not an age recipient"),
    ):
        (resolved,) = with_recipients([target], Reader(secrets))  # type: ignore[arg-type]
        assert resolved.encryption is not None and words in resolved.encryption.problem
        verdict = validate(resolved, Surroundings(PROVIDER, CLUSTER, {}))
        assert verdict.reason == INVALID_ENCRYPTION and words in verdict.message


def test_bad_listed_recipients_are_a_validation_problem() -> None:
    """The CRD's pattern again in the product: a listed key that is not age1... is named."""
    target = _target({"age": {"recipients": ["age1notakey"]}})
    assert target.encryption is not None
    assert "not an age recipient" in target.encryption.problem


def test_the_fingerprint_key_comes_from_the_clusters_secret() -> None:
    """The master key lives in a Secret of the product's namespace, never in Redis (read or
    created there: tests/integration/chart/test_gitops_safe.py)."""
    key = base64.b64decode(base64.b64encode(b"k" * 32))
    sealer = Sealer()
    before = sealer.key_for("u")
    sealer.use_master(key)
    assert sealer.key_for("u") != before and sealer.key_for("u") == Sealer(key).key_for("u")


def test_the_sealer_takes_its_clock_and_randomness_injected() -> None:
    """Conventions 7: lastmodified is the injected clock's time; the data key and nonces come
    from the injected source (so the same inputs seal to the same values but the age part)."""
    sealer = Sealer(b"m", clock=lambda: 1_800_000_000.0, random=lambda n: b"\x07" * n)
    one = sealer.seal({"apiVersion": "v1", "kind": "Secret", "data": {"a": "b"}}, (RECIPIENT,), "u")
    two = sealer.seal({"apiVersion": "v1", "kind": "Secret", "data": {"a": "b"}}, (RECIPIENT,), "u")
    assert one["sops"]["lastmodified"] == "2027-01-15T08:00:00Z"
    assert one["data"] == two["data"] and one["sops"]["mac"] == two["sops"]["mac"]
