"""Every value a commit-message template makes is bounded, not only its output (the 2026-12-06
probe, N3): ``{{$x = print $x $x}}`` repeated doubled a string each step, so a 510-character
template took the watcher from 79 MB to 373 MB while it checked it. Whatever builds the string
(print, printf's verbs, padding, quoting, its EXTRA text, println, nested pipelines), the check
fails with a TemplateError naming the bound, and the memory it took stays small: the peak is
what tracemalloc saw, so the test does not depend on the machine's speed."""

from __future__ import annotations

import tracemalloc

import pytest

from shared.gotemplate import MAX_RUN, MAX_VALUE, TemplateError, parse
from shared.model import templates

#: What a check may take at its peak (they took 0.1 to 2 MiB): a value is at most MAX_VALUE
#: characters (``%q`` may make a piece ten times its argument before it is refused), and all
#: of a run's values add up to MAX_RUN characters.
PEAK = 4 * 1024 * 1024

SEED = '{{$x := "aaaaaaaa"}}'
ASTRAL = '{{$x := "\\U0001F600\\U0001F600"}}'  # four bytes a character in Python
STEPS = 20  # 8 characters doubled 20 times: 8 Mi characters, were nothing bounded

DOUBLINGS = {
    "print": "{{$x = print $x $x}}",
    "printf %s": '{{$x = printf "%s%s" $x $x}}',
    "printf %v": '{{$x = printf "%v%v" $x $x}}',
    "printf %q": '{{$x = printf "%q%q" $x $x}}',
    "printf %x": '{{$x = printf "%x" $x}}',
    "printf width": '{{$x = printf "%s%999s" $x $x}}',
    "printf EXTRA": '{{$x = printf "" $x $x}}',
    "printf bad verb": '{{$x = printf "%d%d" $x $x}}',
    "println": "{{$x = println $x $x}}",
    "many operands": "{{$x = print $x $x $x $x $x $x $x $x}}",
    "nested pipelines": "{{$x = print (print $x $x) (printf `%s` $x)}}",
    "a pipeline": "{{$x = $x | print $x}}",
    "index into a list": "{{$x = print $x (index .Resources 0) $x}}",
}


def _peak_of(check: object) -> int:
    tracemalloc.start()
    try:
        assert callable(check)
        check()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("seed", [SEED, ASTRAL], ids=["ascii", "astral"])
@pytest.mark.parametrize("step", list(DOUBLINGS.values()), ids=list(DOUBLINGS))
def test_a_doubling_template_fails_its_check_with_a_small_peak(seed: str, step: str) -> None:
    """Fails before N3: each of these checked OK (or ran out of memory), with a peak that
    doubled with each step."""
    template = seed + step * STEPS + "{{len $x}}"
    assert len(template) <= templates.MAX_TEMPLATE

    def check() -> None:
        with pytest.raises(TemplateError, match="characters") as caught:
            templates.check(template, templates.GROUP)
        assert "groupTemplate" in str(caught.value)

    peak = _peak_of(check)
    assert peak < PEAK, f"the check peaked at {peak} bytes"


def test_values_kept_in_many_variables_stop_at_the_runs_budget() -> None:
    """Each value under MAX_VALUE, but twenty of them kept at once: the run's budget stops it."""
    wide = "{{$a := printf `%1000s` ``}}{{$a = print " + "$a " * 60 + "}}"
    keep = "".join(f"{{{{$b{i} := printf `%s.` $a}}}}" for i in range(20))
    with pytest.raises(TemplateError, match=f"add up to over {MAX_RUN}"):
        parse(wide + keep).render(None, 100)


def test_a_value_at_the_bound_is_made_and_one_past_it_is_refused() -> None:
    at = f"{{{{$x := printf `%{MAX_VALUE // 1024}s` ``}}}}" + "{{$x = print " + "$x " * 1024
    made = parse(at + "}}{{len $x}}").render(None, 100)
    assert made == str(MAX_VALUE)
    with pytest.raises(TemplateError, match=f"over {MAX_VALUE} characters"):
        parse(at + "`.`}}").render(None, 100)


def test_a_long_data_value_is_printed_up_to_the_limit_and_refused_as_an_operand() -> None:
    """A value printed goes out piece by piece until the output is full (a large window's
    ``{{.Resources}}`` is cut, as before); given to print, it is a value made, and refused."""
    big = {"L": ["x" * 1000] * 100}  # 100,100 characters when shown
    assert parse("{{.L}}").render(big, 100) == "[" + "x" * 99
    with pytest.raises(TemplateError, match="print would make a value of over"):
        parse("{{print .L}}").render(big, 100)
    assert parse('{{index .L 0 | printf "%.3s"}}').render(big, 100) == "xxx"


@pytest.mark.parametrize("constant", ["0x" + "f" * 4000, "0b" + "1" * 65, "1" + "0" * 400])
def test_an_integer_constant_past_64_bits_is_a_template_error(constant: str) -> None:
    """Fails before: ``0xfff...`` (4,000 digits) raised a bare ValueError from Python's
    integer-to-text limit, which the watcher's check does not catch."""
    with pytest.raises(TemplateError, match="bad number syntax"):
        templates.check("{{" + constant + "}}", templates.EVENT)


def test_a_decimal_constant_past_64_bits_is_a_float_as_in_go() -> None:
    assert parse("{{99999999999999999999}}").render(None, 100) == "1e+20"


def test_a_refused_template_is_not_run_again_on_the_next_pass() -> None:
    """The watcher checks every GitProvider each pass: a refusal is remembered as an accepted
    template is, so a template that fails after its whole budget costs it once."""
    template = '{{$y := "b"}}' + "{{$y = print $y $y}}" * 20
    messages = []
    for _ in range(2):
        with pytest.raises(TemplateError) as caught:
            templates.check(template, templates.EVENT)
        messages.append(str(caught.value))
        hits = templates._checked.cache_info().hits
    assert messages[0] == messages[1]
    with pytest.raises(TemplateError):
        templates.check(template, templates.EVENT)
    assert templates._checked.cache_info().hits == hits + 1
