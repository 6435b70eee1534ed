"""The Go ``text/template`` subset commit messages are written in (issue 15): each construct,
each function, trim markers and comments as Go renders them, and the errors it gives."""

from __future__ import annotations

import pytest

from shared.gotemplate import GoMap, Record, TemplateError, parse, sprintf

OPERATIONS = GoMap(UPDATE=1, CREATE=2)
OPERATIONS.zero = 0
ITEM = Record(Group="apps", Version="v1", Resource="deployments", Namespace="team", Name="web")
DATA = Record(
    Name="app",
    Count=3,
    Empty="",
    Operations=OPERATIONS,
    Resources=[ITEM, Record(Group="", Version="v1", Resource="secrets", Namespace="", Name="s")],
    Nothing=[],
)


def run(source: str, limit: int = 10_000) -> str:
    return parse(source).render(DATA, limit)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("plain {text} }}", "plain {text} }}"),
        ("[{{.Name}}] {{.Count}}", "[app] 3"),
        ("{{.}}",
         "{app 3  map[CREATE:2 UPDATE:1] [{apps v1 deployments team web} { v1 secrets  s}] []}"),
        ("{{range .Resources}}{{.Resource}}/{{.Name}};{{end}}", "deployments/web;secrets/s;"),
        ("{{range $k, $v := .Operations}}{{$k}}={{$v}} {{end}}", "CREATE=2 UPDATE=1 "),
        ("{{range $i, $r := .Resources}}{{if $i}}, {{end}}{{$r.Name}}{{end}}", "web, s"),
        ("{{range $r := .Resources}}{{$r.Name}}{{end}}", "webs"),
        ("{{range .Resources}}{{if .Namespace}}{{continue}}{{end}}{{.Name}}{{end}}", "s"),
        ("{{range .Resources}}{{.Name}}{{break}}{{end}}", "web"),
        ("{{range .Nothing}}x{{else}}none{{end}}", "none"),
        ("{{if .Empty}}a{{else if .Count}}b{{else}}c{{end}}", "b"),
        ("{{if not .Count}}a{{else}}c{{end}}", "c"),
        ("{{with .Name}}<{{.}}>{{end}}{{with .Empty}}no{{else}}empty{{end}}", "<app>empty"),
        ("{{with .Empty}}a{{else with .Name}}{{.}}{{end}}", "app"),
        ("a  {{- .Name -}}  \n b", "aappb"),
        ("a {{- /* note */ -}} b", "ab"),
        ("a{{/* {{.Nope}} */}}b", "ab"),
        ("{{-3}}", "-3"),
        ("{{len .Resources}} {{len .Operations}} {{len .Name}} {{len \"é\"}}", "2 2 3 2"),
        ("{{index .Resources 1}}", "{ v1 secrets  s}"),
        ("{{(index .Resources 0).Name}} {{index .Operations \"DELETE\"}}", "web 0"),
        ('{{printf "%s|%5s|%-5s|%.2s" .Name .Name .Name .Name}}', "app|  app|app  |ap"),
        ('{{printf "%d|%03d|%-4d|%+d|%x" .Count .Count .Count .Count 255}}', "3|003|3   |+3|ff"),
        ('{{printf "%v %q %t %%" .Resources .Name true}}',
         '[{apps v1 deployments team web} { v1 secrets  s}] "app" true %'),
        ('{{print "a" 1 2 "b"}} {{print 1 2}}', "a1 2b 1 2"),
        ('{{.Name | printf "%s!"}} {{.Count | len | print}}', None),
        ("{{eq .Count 3}} {{eq .Name \"x\" \"app\"}} {{ne .Count 3}}", "true true false"),
        ("{{lt 1 2}} {{le 2 2}} {{gt \"b\" \"a\"}} {{ge 1 2}}", "true true true false"),
        ("{{and .Count .Empty}}|{{and .Count .Name}}|{{or .Empty 0}}|{{or .Empty .Name}}",
         "|app|0|app"),
        ("{{and .Empty (index .Resources 9)}}", ""),  # and stops at the first false argument
        ("{{$x := .Count}}{{if true}}{{$x = 7}}{{end}}{{$x}} {{$.Name}}", "7 app"),
        ('{{"a\\tb\\x41\\u00e9"}} {{`raw\\n`}} {{\'A\'}} {{0x10}} {{1.5}} {{true}}',
         "a\tbAé raw\\n 65 16 1.5 true"),
    ],
)  # fmt: skip
def test_renders_as_go_does(source: str, expected: str | None) -> None:
    if expected is None:  # a piped value is the last argument; len of an int is an error
        with pytest.raises(TemplateError, match="len of type int"):
            run(source)
        assert run('{{.Name | printf "%s!"}}') == "app!"
        return
    assert run(source) == expected


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("{{.Nope}}", "can't evaluate field Nope in type struct"),
        ("{{.Operations.DELETE}}", 'map has no entry for key "DELETE"'),
        ("{{.Name.First}}", "can't evaluate field First in type string"),
        ('{{define "x"}}a{{end}}', "{{define}} is refused"),
        ('{{template "x"}}', "{{template}} is refused"),
        ('{{block "x" .}}a{{end}}', "{{block}} is refused"),
        ("{{call .Name}}", 'function "call" not defined'),
        ("{{if .Name}}a", "without {{end}}"),
        ("{{end}}", "unexpected {{end}}"),
        ("{{.Name", "unclosed action"),
        ("{{/* never closed", "unclosed comment"),
        ("{{$x}}", 'undefined variable "$x"'),
        ("{{if true}}{{$y := 1}}{{end}}{{$y}}", 'undefined variable "$y"'),
        ("{{break}}", "{{break}} outside {{range}}"),
        ("{{range .Count}}{{end}}", "range can't iterate over 3"),
        ("{{range 1000000000}}{{end}}", "range can't iterate over 1000000000"),
        ("{{.Name .Count}}", "can't give argument to non-function .Name"),
        ("{{.Name | .Count}}", "can't give argument to non-function"),
        ("{{len}}", "wrong number of args for len: want 1 got 0"),
        ("{{eq .Count}}", "wrong number of args for eq"),
        ('{{eq .Count "3"}}', "incompatible types for comparison"),
        ("{{lt true false}}", "invalid type for comparison"),
        ("{{index .Resources 5}}", "index out of range: 5"),
        ('{{printf "%*d" 5 3}}', "a * width or precision is refused"),
        ('{{printf "%2000d" 3}}', "over 1000 is refused"),
        ("{{nil}}", "nil is not a command"),
        ("{{}}", "missing value for command"),
        ('{{"\\q"}}', "unknown escape"),
        ("{{(}}", "unclosed left paren"),
        ("{{.Name | }}", "missing command"),
    ],
)
def test_errors_say_what_is_wrong(source: str, error: str) -> None:
    with pytest.raises(TemplateError) as caught:
        run(source)
    assert error in str(caught.value)


def test_printf_mismatches_print_as_go_prints_them() -> None:
    assert sprintf("%d %s", ["x"]) == "%!d(string=x) %!s(MISSING)"
    assert sprintf("%s", ["a", 1]) == "a%!(EXTRA int=1)"
    assert sprintf("%z %", [1]) == "%!z(int=1) %!(NOVERB)"
    assert sprintf("%q %c %X", ['a\n"', 65, "hi"]) == '"a\\n\\"" A 6869'


def test_output_stops_at_the_limit() -> None:
    source = "{{range .Resources}}" + "x" * 100 + "{{end}}"
    assert run(source, limit=150) == "x" * 150


def test_work_is_bounded_even_without_output() -> None:
    """Nested ranges over the data: each level multiplies, so the step budget stops it."""
    wide = Record(L=list(range(200)))
    source = "{{range .L}}{{range $.L}}{{range $.L}}{{end}}{{end}}{{end}}"
    with pytest.raises(TemplateError, match="runs longer than"):
        parse(source).render(wide, 100)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(TemplateError, match="nests too deeply"):
        parse("{{if true}}" * 2000 + "{{end}}" * 2000)
