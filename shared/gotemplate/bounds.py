"""The bounds every run keeps, whatever the template (N3): steps, the source's length, a
printf width or precision, each value a run makes and all of a run's values together. A value
is built in ``Pieces``, which refuses it as soon as it would pass its room, so no value
outgrows its bound however its pieces repeat."""

from __future__ import annotations

from shared.gotemplate.show import measure, show
from shared.gotemplate.values import TemplateError

MAX_STEPS = 200_000
MAX_WIDTH = 1000
MAX_SOURCE = 64 * 1024
#: Characters one value a run makes may have, and all the values of one run together (N3).
MAX_VALUE = 64 * 1024
MAX_RUN = 1024 * 1024


class Pieces:
    """A text a run makes, built piece by piece and refused (``TemplateError`` ``refusal``) as
    soon as it would pass ``room`` characters (N3), so no value outgrows its bound however its
    pieces repeat."""

    def __init__(self, room: int, refusal: str) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.room = room
        self.refusal = refusal

    def add(self, text: str) -> None:
        self.size += len(text)
        if self.size > self.room:
            raise TemplateError(self.refusal)
        self.parts.append(text)

    def fits(self, value: object) -> None:
        """Refuses ``value`` before it is shown when its text alone passes the room."""
        if measure(value, self.room) > self.room:
            raise TemplateError(self.refusal)

    def shown(self, value: object) -> None:
        self.fits(value)
        self.add(show(value))

    def text(self) -> str:
        return "".join(self.parts)


def too_long(name: str, room: int) -> str:
    """The refusal of a value ``name`` would make past ``room`` characters."""
    return (
        f"{name} would make a value of over {room} characters (a value a template makes may"
        f" have at most {MAX_VALUE})"
    )
