"""What the writer does to a folder, against real Redis and a real bare repository: in-place
edits of files people wrote (P1, M5), bootstrap files with the first object (P4) and
``.gittargetignore`` honoured, with ``IgnoreShadowsManagedPath`` when it hides a managed path.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sandbox.githost.outside import git, push
from services.branch_worker import writer
from services.branch_worker.branch import BranchLoop
from services.branch_worker.folder import Folder
from shared.git.workspace import Workspace
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

CM = "apps/team/configmaps/app.yaml"
HAND_WRITTEN = """\
# Settings of the app; owned by team blue
apiVersion: v1
kind: ConfigMap
metadata:
    name: app
    namespace: team
data:
    # how fast it goes
    mode: "fast"   # fast or slow
    level: info
---
# the other half, in the same file
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: team}
data:
  port: "8080"
"""


def _loop(rig: Rig, files: dict[str, str]) -> BranchLoop:
    """A branch loop over a remote that already holds ``files`` (pushed by someone else)."""
    push(str(rig.bare), rig.tmp / "person", files, "a person's files")
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    return rig.loop()


def _diff(rig: Rig) -> list[str]:
    """The changed lines of the last commit."""
    out = git("show", "--format=", "-U0", "main", cwd=rig.bare)
    return [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]


def test_an_update_edits_a_hand_written_file_in_place(rig: Rig) -> None:
    """P1: the commit changes one line; comments, quoting, indentation and the file's other
    document are as the person wrote them; M5: the document says what the API object says."""
    loop = _loop(rig, {"apps/settings.yaml": HAND_WRITTEN})
    rig.publish("app", "UPDATE", {"mode": "slow", "level": "info"})
    rig.drain(loop)
    loop.flush()
    assert rig.commits()[0] == "[UPDATE] v1/configmaps/app"
    assert _diff(rig) == [
        '-    mode: "fast"   # fast or slow',
        '+    mode: "slow"   # fast or slow',
    ]
    assert rig.show("apps/settings.yaml") + "\n" == HAND_WRITTEN.replace('"fast"', '"slow"')


def test_a_field_the_api_lacks_goes_and_the_comment_above_the_next_stays(rig: Rig) -> None:
    loop = _loop(rig, {"apps/settings.yaml": HAND_WRITTEN})
    rig.publish("app", "UPDATE", {"level": "info"})
    rig.drain(loop)
    loop.flush()
    assert _diff(rig) == ['-    mode: "fast"   # fast or slow']
    assert "    # how fast it goes\n    level: info\n" in rig.show("apps/settings.yaml")


def test_deleting_one_object_of_a_file_keeps_the_other_document_as_written(rig: Rig) -> None:
    loop = _loop(rig, {"apps/settings.yaml": HAND_WRITTEN})
    rig.publish("web", "DELETE")
    rig.drain(loop)
    loop.flush()
    assert rig.show("apps/settings.yaml") + "\n" == HAND_WRITTEN[: HAND_WRITTEN.index("---")]


def test_the_first_object_brings_the_bootstrap_files_in_its_commit(rig: Rig) -> None:
    """P4: README.md and .gittargetignore arrive with the folder's first object, once; the
    .gittargetignore is all comments (nothing ignored until someone writes a pattern)."""
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    first = git("show", "--format=", "--name-only", "main", cwd=rig.bare).split()
    assert sorted(first) == ["apps/.gittargetignore", "apps/README.md", CM]
    assert "gittarget `team/gt`" in rig.show("apps/README.md").lower()
    ignore = rig.show("apps/.gittargetignore").splitlines()
    assert ignore and all(line.startswith("#") for line in ignore)
    rig.publish("second", "CREATE")
    rig.drain(loop)
    loop.flush()
    second = git("show", "--format=", "--name-only", "main", cwd=rig.bare).split()
    assert second == ["apps/team/configmaps/second.yaml"]


def test_a_bootstrap_file_a_person_wrote_is_kept(rig: Rig) -> None:
    loop = _loop(rig, {"apps/.gittargetignore": "notes/\n"})
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert rig.show("apps/.gittargetignore") == "notes/"
    assert "apps/README.md" in rig.files()


def test_ignored_paths_are_neither_refused_nor_managed(rig: Rig) -> None:
    """P4: an unknown file and a manifest under an ignored path do not refuse the folder, and
    the ignored manifest is never edited."""
    ignored = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: draft, namespace: team}\n"
    loop = _loop(
        rig,
        {
            "apps/.gittargetignore": "# ours\nnotes/\n*.draft.yaml\n",
            "apps/notes/deploy.sh": "#!/bin/sh\n",
            "apps/x.draft.yaml": ignored,
        },
    )
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert CM in rig.files()
    assert rig.configs.refusal(rig.target.uid) is None
    assert rig.show("apps/x.draft.yaml") + "\n" == ignored


def test_a_pattern_hiding_every_manifest_refuses_the_folder(rig: Rig) -> None:
    loop = _loop(rig, {"apps/.gittargetignore": "*.yaml\n"})
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert CM not in rig.files()
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "IgnoreShadowsManagedPath"
    assert "apps/.gittargetignore hides files gitops-reverser writes" in refusal["message"]


def test_a_pattern_hiding_an_objects_file_refuses_the_folder(rig: Rig) -> None:
    """The object's document is in an ignored file (or its new file would be ignored): writing
    it elsewhere would make a second document for it, so the folder is refused, and stays
    refused for the other objects too until the folder changes."""
    hidden = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: team}\n"
    loop = _loop(rig, {"apps/.gittargetignore": "legacy/\n", "apps/legacy/app.yaml": hidden})
    rig.publish("app", "UPDATE", {"a": "1"})
    rig.publish("other", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert rig.commits()[0] == "a person's files"
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "IgnoreShadowsManagedPath"
    assert "hides apps/legacy/app.yaml" in refusal["message"]


def test_a_comment_added_to_a_file_the_product_wrote_survives_the_next_update(rig: Rig) -> None:
    """The writer remembers which files it rendered by their bytes, not their names: once a
    person comments the file, the next update edits it in place (P1)."""
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop()
    rig.publish("app", "CREATE", {"a": "1", "b": "2"})
    rig.drain(loop)
    loop.flush()
    commented = rig.show(CM).replace("  a: '1'", "  # a is read at start-up\n  a: '1'") + "\n"
    push(str(rig.bare), rig.tmp / "person", {CM: commented}, "a comment")
    loop.check_tip()
    rig.publish("app", "UPDATE", {"a": "1", "b": "3"})
    rig.drain(loop)
    loop.flush()
    assert rig.show(CM) + "\n" == commented.replace("b: '2'", "b: '3'")


def test_a_file_edited_in_place_is_edited_again_without_a_whole_render(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P1, cost: the writer knows the bytes it edited in place, so the next edit of that file
    does not render its documents whole to learn it is a person's; a file a person changed
    since is checked again, and still edited in place."""
    renders: list[int] = []
    whole = writer._rendered

    def counted(docs: list[dict[str, Any]]) -> bytes:
        renders.append(1)
        return whole(docs)

    monkeypatch.setattr(writer, "_rendered", counted)
    ws = Workspace(rig.tmp / "tree", str(rig.bare), "main")
    ws.write("apps/settings.yaml", HAND_WRITTEN.encode())
    folder = Folder(ws, "apps")

    def edit(mode: str) -> str:
        event = rig.event("app", "UPDATE", {"mode": mode, "level": "info"})
        assert writer.apply_event(ws, rig.target, event, folder).kind == "write"
        return (ws.read("apps/settings.yaml") or b"").decode()

    assert edit("slow") == HAND_WRITTEN.replace('"fast"', '"slow"')
    assert edit("fast") == HAND_WRITTEN
    assert len(renders) == 1  # the first edit only
    by_hand = HAND_WRITTEN.replace("level: info", "level: info # me")
    ws.write("apps/settings.yaml", by_hand.encode())
    assert edit("slow") == by_hand.replace('"fast"', '"slow"')
    assert len(renders) == 2  # the person's bytes were checked again
