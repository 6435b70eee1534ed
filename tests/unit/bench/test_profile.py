"""``bench.profile.summary``: the top functions of a py-spy collapsed-stack profile."""

from __future__ import annotations

from bench.profile import summary

COLLAPSED = """\
main (app.py:1);loop (app.py:9);push (git.py:3) 60
main (app.py:1);loop (app.py:9);render (yaml.py:7) 30
main (app.py:1);idle (app.py:20) 10
not a line
"""


def test_the_summary_counts_self_and_inclusive_samples() -> None:
    text = summary(COLLAPSED)
    lines = text.splitlines()
    assert lines[0] == "100 samples"
    own = lines[lines.index("self:") + 1 : lines.index("inclusive:") - 1]
    assert own == [
        " 60.0%  push (git.py:3)",
        " 30.0%  render (yaml.py:7)",
        " 10.0%  idle (app.py:20)",
    ]
    through = lines[lines.index("inclusive:") + 1 :]
    assert through[0] == "100.0%  main (app.py:1)"
    assert through[1] == " 90.0%  loop (app.py:9)"


def test_a_frame_repeated_in_one_stack_counts_once_inclusive() -> None:
    text = summary("a;b;a 4\n")
    assert "100.0%  a" in text.splitlines()
    assert "50.0%" not in text
