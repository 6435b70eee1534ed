"""The soak's editor never waits for ever on the API, and knows its writes' outcome.

Outside check 10 (issue 23).

A seeded soak on a busy machine failed with the editor stuck for two minutes in an API call
after it was asked to stop: its calls had no timeout, so a request the API never answered held
it for ever. Here a fake CoreV1Api loses answers: called without a timeout it waits (as a
socket with no timeout does), with one it raises urllib3's ``ReadTimeoutError`` (as the client
does when the time is up). The lost request may have been applied or not; either way the
editor must end its write and hold what the API holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import ApplierTenant
from tests.soak import actors
from tests.soak.actors import Editor, Write

NS = "chaos-0"
#: Bound on an edit the fake answers at its second try (a wait for a thread, not a sleep).
DONE_S = 30.0


@dataclass
class FakeCore:
    """ConfigMaps of one namespace, versions and preconditions as the API server keeps them;
    the calls numbered in ``lose`` are not answered (applied first when ``applied``)."""

    lose: set[int] = field(default_factory=set)
    applied: bool = False
    objects: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> value, rv
    calls: list[str] = field(default_factory=list)
    version: int = 100
    never: threading.Event = field(default_factory=threading.Event)

    def _answer(self, what: str, timeout: Any, write: Any) -> Any:
        self.calls.append(what)
        lost = len(self.calls) in self.lose
        result = write() if not lost or self.applied else None
        if not lost:
            return result
        if timeout is None:
            self.never.wait()  # no timeout: the caller waits for ever (until the test ends)
        raise urllib3.exceptions.ReadTimeoutError(None, "/api", "read timed out")  # type: ignore[arg-type]

    def _put(self, name: str, value: str) -> client.V1ConfigMap:
        self.version += 1
        self.objects[name] = (value, str(self.version))
        return self.read_namespaced_config_map(name, NS)

    def create_namespaced_config_map(
        self, ns: str, body: client.V1ConfigMap, _request_timeout: Any = None
    ) -> client.V1ConfigMap:
        def write() -> client.V1ConfigMap:
            if body.metadata.name in self.objects:
                raise ApiException(status=409, reason="AlreadyExists")
            return self._put(body.metadata.name, body.data["edit"])

        return self._answer("create", _request_timeout, write)

    def replace_namespaced_config_map(
        self, name: str, ns: str, body: client.V1ConfigMap, _request_timeout: Any = None
    ) -> client.V1ConfigMap:
        def write() -> client.V1ConfigMap:
            self._precondition(name, body.metadata.resource_version)
            return self._put(name, body.data["edit"])

        return self._answer("replace", _request_timeout, write)

    def delete_namespaced_config_map(
        self,
        name: str,
        ns: str,
        body: client.V1DeleteOptions | None = None,
        _request_timeout: Any = None,
    ) -> None:
        def write() -> None:
            pre = body.preconditions.resource_version if body and body.preconditions else None
            self._precondition(name, pre)
            del self.objects[name]

        self._answer("delete", _request_timeout, write)

    def read_namespaced_config_map(
        self, name: str, ns: str, _request_timeout: Any = None
    ) -> client.V1ConfigMap:
        if name not in self.objects:
            raise ApiException(status=404, reason="NotFound")
        value, version = self.objects[name]
        meta = client.V1ObjectMeta(name=name, namespace=ns, resource_version=version)
        return client.V1ConfigMap(metadata=meta, data={"edit": value})

    def _precondition(self, name: str, version: str | None) -> None:
        if name not in self.objects:
            raise ApiException(status=404, reason="NotFound")
        if version is not None and version != self.objects[name][1]:
            raise ApiException(status=409, reason="Conflict")


@pytest.fixture(autouse=True)
def no_resend_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(actors, "RESEND_PAUSE_S", 0.0)


@pytest.fixture
def fake() -> Iterator[FakeCore]:
    api = FakeCore()
    yield api
    api.never.set()  # release a call that waits for ever (the editor before the fix)


def editor_on(api: FakeCore) -> Editor:
    tenant: Any = type("Tenant", (), {"ns": NS})()
    tenants: list[ApplierTenant] = [tenant]
    return Editor("editor", 1, threading.Event(), tenants=tenants, api=api)  # type: ignore[arg-type]


@pytest.mark.parametrize("applied", [False, True], ids=["lost-before", "lost-after"])
def test_an_edit_whose_answer_is_lost_ends_and_knows_its_outcome(
    fake: FakeCore, applied: bool
) -> None:
    """The editor's first write (a create) is not answered; it is sent again, not waited for."""
    fake.lose, fake.applied = {1}, applied
    editor = editor_on(fake)
    edit = threading.Thread(target=editor.edit_once, daemon=True)
    edit.start()
    edit.join(DONE_S)
    assert not edit.is_alive(), "the editor waits for an answer that never comes"
    [(name, value)] = [(n, v) for (_, n), v in editor.final.items()]
    assert fake.objects[name][0] == value and editor.count == 1
    assert fake.calls[:2] == ["create", "create"]


def _created(api: FakeCore, editor: Editor, name: str = "cm-1") -> None:
    assert Write(editor, "create", NS, name, "v0").outcome()


@pytest.mark.parametrize("applied", [False, True], ids=["lost-before", "lost-after"])
def test_an_update_sent_twice_is_applied_once(fake: FakeCore, applied: bool) -> None:
    editor = editor_on(fake)
    _created(fake, editor)
    fake.lose, fake.applied = {2}, applied
    assert Write(editor, "update", NS, "cm-1", "v1").outcome()
    assert fake.objects["cm-1"][0] == "v1"
    assert editor.versions[(NS, "cm-1")] == fake.objects["cm-1"][1]


@pytest.mark.parametrize("applied", [False, True], ids=["lost-before", "lost-after"])
def test_a_delete_sent_twice_ends_with_the_object_gone(fake: FakeCore, applied: bool) -> None:
    editor = editor_on(fake)
    _created(fake, editor)
    fake.lose, fake.applied = {2}, applied
    assert Write(editor, "delete", NS, "cm-1", None).outcome()
    assert "cm-1" not in fake.objects and (NS, "cm-1") not in editor.versions


def test_an_update_of_an_object_changed_by_someone_else_is_chosen_again(
    fake: FakeCore,
) -> None:
    """Flux applied the object meanwhile: the write is refused and not counted."""
    editor = editor_on(fake)
    _created(fake, editor)
    fake._put("cm-1", "from-git")
    assert not Write(editor, "update", NS, "cm-1", "v1").outcome()
    assert fake.objects["cm-1"][0] == "from-git"
    assert editor.versions[(NS, "cm-1")] == fake.objects["cm-1"][1]


def test_an_api_that_never_answers_is_reported_not_waited_for(
    fake: FakeCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(actors, "UNANSWERED_S", 0.5)
    fake.lose = set(range(1, 10_000))
    with pytest.raises(AssertionError, match="no answer"):
        Write(editor_on(fake), "create", NS, "cm-1", "v0").outcome()
