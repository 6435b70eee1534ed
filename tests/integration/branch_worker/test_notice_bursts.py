"""C4: a burst of push notices costs one tip read per wake, not one per delivery (Q5, R4)."""

from __future__ import annotations

import pytest

from shared.git.remote import ls_remote
from shared.model.notices import PushNotice
from shared.store.notice_reader import NoticeReader
from shared.store.notices import NoticeWriter
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

BURST = 300


def _burst(rig: Rig) -> list[PushNotice]:
    return [rig.notice(f"{i:040x}") for i in range(BURST)]


def test_a_burst_of_notices_reads_the_tip_once(rig: Rig) -> None:
    """Fails before C4: one ls-remote per notice (300 here)."""
    reads: list[str | None] = []

    def read_tip() -> str | None:
        reads.append(tip := ls_remote(str(rig.bare), "main"))
        return tip

    loop = rig.loop(read_tip=read_tip)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    foreign = rig.foreign_push()
    loop.on_notices(_burst(rig))
    assert reads == [rig.head()], "one read for the whole burst"
    assert not loop.busy(), "the open window was closed and pushed once, before the read"
    assert rig.commits()[:2] == ["[CREATE] v1/configmaps/app", "foreign notes.md"]
    assert rig.states.read(rig.bk).foreign_tip == foreign


def test_one_read_takes_every_notice_waiting(rig: Rig) -> None:
    """Fails before C4: the reader took 100 notices a call, so a burst took several wakes, each
    with its own tip read."""
    reader = NoticeReader(rig.client, rig.keys)
    reader.start(rig.bk)
    writer = NoticeWriter(rig.client, rig.keys)
    for i, notice in enumerate(_burst(rig)):
        assert writer.store("team/gp", f"delivery-{i}", [notice])
    found = reader.read_many([rig.bk])
    assert len(found[rig.bk]) == BURST
    assert reader.read_many([rig.bk]) == {}, "nothing left for a second read"
