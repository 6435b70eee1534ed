"""The applier store on real Redis and on fakeredis alike: the update hands back the step's
decision, writes only a changed record, and keeps no key for an empty one (A1-A5)."""

from __future__ import annotations

from dataclasses import replace

from shared.decide.obligations import owe_foreign_commit
from shared.model.appliers import Applier
from shared.model.config import ApplierRef
from shared.store.appliers import ApplierStore
from tests.suites.store_suite import StoreUnderTest

REF = ApplierRef("Kustomization", "flux-system", "apps", "default")
#: A TTL no product write sets: it survives exactly as long as nobody SETs the key again.
MARK_S = 1000


def test_update_returns_the_new_record_and_the_steps_answer(store: StoreUnderTest) -> None:
    appliers = ApplierStore(store.client, store.keys)
    new, answer = appliers.update(
        REF.key, REF.kind, lambda a: (owe_foreign_commit(a, "c1", ["u1"]), "owed")
    )
    assert answer == "owed"
    assert new.foreign_commit == "c1" and appliers.load(REF.key, REF.kind) == new


def test_an_unchanged_record_is_not_written_again(store: StoreUnderTest) -> None:
    appliers = ApplierStore(store.client, store.keys)
    appliers.amend(REF.key, REF.kind, lambda a: owe_foreign_commit(a, "c1", ["u1"]))
    key = store.keys.applier(REF.key)
    store.client.expire(key, MARK_S)
    same, answer = appliers.update(REF.key, REF.kind, lambda a: (a, "wait"))
    assert answer == "wait" and same.foreign_commit == "c1"
    assert store.client.ttl(key) > 0, "no SET: the mark is still there"
    appliers.amend(REF.key, REF.kind, lambda a: replace(a, failures=1))
    assert store.client.ttl(key) == -1, "a changed record is SET (which drops the mark)"


def test_a_record_with_nothing_in_it_has_no_key(store: StoreUnderTest) -> None:
    appliers = ApplierStore(store.client, store.keys)
    key = store.keys.applier(REF.key)
    periods_only, _ = appliers.update(
        REF.key, REF.kind, lambda a: (replace(a, quiet_periods={"u1": 30.0}), None)
    )
    assert periods_only.quiet_periods == {"u1": 30.0}
    assert not store.client.exists(key), "quiet periods alone are not worth a key"
    appliers.amend(REF.key, REF.kind, lambda a: owe_foreign_commit(a, "c1", ["u1"]))
    assert store.client.exists(key)
    appliers.amend(REF.key, REF.kind, lambda a: Applier(a.kind))
    assert not store.client.exists(key), "emptied again: the key goes"
