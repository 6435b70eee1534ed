"""``gitops-reverser convert`` over a corpus of the Go operator's manifests (written from its
field tables, ../shared/facts/upstream-gitops-reverser.md §2 and upstream-0.50.md): each
``*.upstream.yaml`` converts to its ``*.ours.yaml``; each field with no equivalent is refused
by name with exit 6 and nothing on stdout."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.app import main
from services.cli.convert import convert, parse
from services.cli.errors import EXIT_CHECK_FAILED, EXIT_ERROR, EXIT_OK

CORPUS = Path(__file__).parent / "convert_corpus"
CASES = sorted(p.name.removesuffix(".upstream.yaml") for p in CORPUS.glob("*.upstream.yaml"))


def run(argv: list[str], stdin: str, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> Any:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["convert", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES)
def test_each_corpus_file_converts_to_its_golden(case: str) -> None:
    upstream = parse((CORPUS / f"{case}.upstream.yaml").read_text(), case)
    expected = parse((CORPUS / f"{case}.ours.yaml").read_text(), case)
    result = convert(upstream)
    assert result.refusals == []
    assert result.documents == expected


def test_the_corpus_covers_every_upstream_kind() -> None:
    kinds = {
        doc["kind"]
        for case in CASES
        for doc in parse((CORPUS / f"{case}.upstream.yaml").read_text(), case)
        if doc["apiVersion"].startswith("configbutler.ai/")
    }
    assert kinds == {
        "GitProvider",
        "GitTarget",
        "WatchRule",
        "ClusterWatchRule",
        "ClusterProvider",
        "CommitRequest",
    }


def test_the_command_prints_yaml_documents_from_files_and_folders(
    capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    code, out, err = run(["-f", str(CORPUS / "targets.upstream.yaml")], "", capsys, monkeypatch)
    assert (code, err) == (EXIT_OK, "")
    assert list(yaml.safe_load_all(out)) == parse((CORPUS / "targets.ours.yaml").read_text(), "x")
    code, out, _ = run(["-f", str(CORPUS)], "", capsys, monkeypatch)
    assert code == EXIT_OK
    # The folder holds the goldens too: they are ours already and pass through unchanged.
    docs = list(yaml.safe_load_all(out))
    assert {d["apiVersion"] for d in docs} == {"gitopsreverser.io/v1alpha1", "v1"}


def test_stdin_a_list_and_json_output(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "items": parse((CORPUS / "flux-shapes.upstream.yaml").read_text(), "x"),
    }
    code, out, _ = run(["-o", "json"], json.dumps(listed), capsys, monkeypatch)
    assert code == EXIT_OK
    body = json.loads(out)
    assert body["kind"] == "List"
    assert body["items"] == parse((CORPUS / "flux-shapes.ours.yaml").read_text(), "x")
    one = parse((CORPUS / "flux-shapes.upstream.yaml").read_text(), "x")[0]
    code, out, _ = run(["-f", "-", "-o", "json"], yaml.safe_dump(one), capsys, monkeypatch)
    assert json.loads(out)["spec"]["providerRef"] == {"name": "shop-repo"}


def target(**spec: Any) -> dict[str, Any]:
    base = {"providerRef": {"name": "repo"}, "branch": "main", "path": "apps"}
    return {
        "apiVersion": "configbutler.ai/v1alpha3",
        "kind": "GitTarget",
        "metadata": {"name": "apps", "namespace": "team"},
        "spec": {**base, **spec},
    }


def obj(kind: str, spec: dict[str, Any], ns: str | None = "team") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x"}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "configbutler.ai/v1alpha3", "kind": kind, "metadata": meta, "spec": spec}


RULE = {"apiGroups": [""], "resources": ["configmaps"]}
REFUSED = [
    (target(allowedSourceNamespaces={"names": ["a"]}), "spec.allowedSourceNamespaces"),
    (target(futureField=1), "spec.futureField"),
    (
        target(encryption={"age": {"enabled": True, "recipients": {"extractFromSecret": True}}}),
        "spec.encryption.age.recipients.extractFromSecret",
    ),
    (target(providerRef={"kind": "GitRepository", "name": "r"}), "spec.providerRef.kind"),
    (
        obj("GitProvider", {"url": "u", "commit": {"message": {"reconcileTemplate": "r"}}}),
        "spec.commit.message.reconcileTemplate",
    ),
    (
        obj("WatchRule", {"targetRef": {"name": "t"}, "rules": [{**RULE, "sourceNamespace": "*"}]}),
        "spec.rules[0].sourceNamespace",
    ),
    (
        obj("WatchRule", {"targetRef": {"name": "t"}, "rules": [{"resources": ["pods"]}]}),
        "spec.rules[0].apiGroups",
    ),
    (
        obj("WatchRule", {"targetRef": {"name": "t", "namespace": "other"}, "rules": [RULE]}),
        "spec.targetRef.namespace",
    ),
    (
        obj(
            "ClusterWatchRule",
            {
                "targetRef": {"name": "t", "namespace": "n"},
                "rules": [{**RULE, "scope": "Namespaced"}],
            },
            ns=None,
        ),
        "spec.rules[0].scope",
    ),
    (obj("ClusterProvider", {"qps": 50}, ns=None), "spec.qps"),
    (
        obj("ClusterProvider", {"allowSourceNamespaceOverride": True}, ns=None),
        "spec.allowSourceNamespaceOverride",
    ),
    (obj("ClusterProvider", {"attribution": {"auditRoute": "r"}}, ns=None), "spec.attribution"),
    (
        obj("ClusterProvider", {"kubeConfig": {"configMapRef": {"name": "c"}}}, ns=None),
        "spec.kubeConfig.configMapRef",
    ),
    (obj("GitRepoConfig", {"repoUrl": "u"}), "kind"),
    (obj("CommitRequest", {"targetRef": {"name": "t"}, "author": "me"}), "spec.author"),
]


#: What ours still cannot say of upstream 0.50's fields.
REFUSED += [
    (target(serializeNamespace=False), "spec.serializeNamespace"),
    (
        target(placement={"default": "{name}.yaml"}, serializeNamespace=False),
        "spec.serializeNamespace",
    ),
    (target(serializeNamespace="no"), "spec.serializeNamespace"),
    (target(onRefusal="Reapply"), "spec.onRefusal"),
]


@pytest.mark.parametrize(("doc", "field"), REFUSED, ids=[f for _, f in REFUSED])
def test_a_field_with_no_equivalent_is_refused_by_name(doc: dict[str, Any], field: str) -> None:
    result = convert([doc])
    assert len(result.refusals) == 1
    meta = doc["metadata"]
    where = f"{meta['namespace']}/" if "namespace" in meta else ""
    assert result.refusals[0].startswith(f"{doc['kind']} {where}{meta['name']}: {field}: ")


def test_a_refusal_prints_every_field_and_nothing_on_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    docs = [
        target(allowedSourceNamespaces={"names": ["a"]}),
        obj("ClusterProvider", {"qps": 5}, ns=None),
        target(),
    ]
    code, out, err = run([], yaml.safe_dump_all(docs), capsys, monkeypatch)
    assert code == EXIT_CHECK_FAILED
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("error: GitTarget team/apps: spec.allowedSourceNamespaces: has no")
    assert lines[1].startswith("error: ClusterProvider x: spec.qps: has no equivalent")
    assert "2 field(s) with no equivalent" in lines[2]


def test_signing_moves_to_the_gittargets_or_is_refused_without_them() -> None:
    provider = obj("GitProvider", {"url": "u", "commit": {"signing": {"secretRef": {"name": "k"}}}})
    provider["metadata"]["name"] = "repo"
    alone = convert([provider])
    assert alone.refusals == [
        "GitProvider team/repo: spec.commit.signing: ours signs per GitTarget "
        "(spec.commit.signing); convert it together with the GitTargets that use it"
    ]
    together = convert([target(), provider])
    assert together.refusals == []
    assert together.documents[0]["spec"]["commit"] == {"signing": {"secretRef": {"name": "k"}}}
    assert "commit" not in together.documents[1]["spec"]


def test_notes_for_what_converts_with_a_default() -> None:
    cp = obj("ClusterProvider", {"kubeConfig": {"secretRef": {"name": "kc"}}}, ns=None)
    enc = {
        "secretRef": {"name": "age"},
        "age": {"enabled": True, "recipients": {"publicKeys": ["age1x"]}},
    }
    result = convert([cp, target(encryption=enc)])
    assert result.refusals == []
    assert result.documents[0]["spec"]["kubeConfig"]["secretRef"] == {"name": "kc", "key": "value"}
    assert result.documents[1]["spec"]["encryption"] == {
        "provider": "sops",
        "age": {"recipients": ["age1x"]},
    }
    assert [n.split(":")[0] for n in result.notes] == ["ClusterProvider x", "GitTarget team/apps"]


def test_a_watch_rule_without_a_namespace_converts_unless_it_names_a_source_namespace() -> None:
    rule = obj("WatchRule", {"targetRef": {"name": "t"}, "rules": [RULE]}, ns=None)
    assert convert([rule]).documents[0]["spec"] == {"targetRef": {"name": "t"}, "rules": [RULE]}
    rule["spec"]["rules"] = [{**RULE, "sourceNamespace": "team"}]
    (refusal,) = convert([rule]).refusals
    assert refusal.startswith("WatchRule x: spec.rules[0].sourceNamespace: has no equivalent")


def test_encryption_switched_off_upstream_is_absent_in_ours() -> None:
    result = convert([target(encryption={"provider": "sops", "age": {"enabled": False}})])
    assert "encryption" not in result.documents[0]["spec"]


def test_documents_of_other_groups_pass_through_unchanged() -> None:
    others = [
        {"apiVersion": "examples.configbutler.ai/v1", "kind": "Demo", "spec": {"a": 1}},
        {"apiVersion": "gitopsreverser.io/v1alpha1", "kind": "GitTarget", "spec": {"x": 1}},
        "a scalar document",
    ]
    assert convert(others).documents == others


def test_unreadable_input_is_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: Any, tmp_path: Path
) -> None:
    code, out, err = run([], "a: [", capsys, monkeypatch)
    assert (code, out) == (EXIT_ERROR, "")
    assert err.startswith("error: stdin: not YAML")
    code, _, err = run(["-f", str(tmp_path / "missing.yaml")], "", capsys, monkeypatch)
    assert code == EXIT_ERROR
    assert "no such file or directory" in err


UPSTREAM_050 = target(
    suspend=True,
    onRefusal="PushEmptyCommit",
    placement={
        "default": "{namespaceOrCluster}/{resource}/{name}.yaml",
        "byType": {
            "apps/v1/deployments": "apps/{label:app.kubernetes.io/name|misc}/{name}.yaml",
            "v1/configmaps": "{namespace|shared}/config/{name}.yml",
        },
        "useKustomize": True,
    },
    serializeNamespace=False,
    commit={
        "window": "30s",
        "message": {"liveTemplate": "{{.Count}} live", "reconcileTemplate": "r"},
    },
)


def test_issue_27_fields_map_to_ours() -> None:
    """Every field upstream added in 0.42 to 0.50 is in our CRDs and mapped (the integration
    test creates the corpus's in an API server serving the chart's CRDs)."""
    rule = obj(
        "WatchRule",
        {
            "targetRef": {"name": "t"},
            "rules": [{**RULE, "objectSelector": {"matchLabels": {"a": "b"}}}],
        },
    )
    result = convert([UPSTREAM_050, rule])
    assert result.refusals == []
    spec = result.documents[0]["spec"]
    assert spec["suspend"] is True
    assert spec["onRefusal"] == "PushEmptyCommit"
    assert spec["placement"] == {
        "default": "{namespace|_cluster}/{resource}/{name}.yaml",
        "byType": {
            "apps/deployments": "apps/{label:app.kubernetes.io/name|misc}/{name}.yaml",
            "configmaps": "{namespace|shared}/config/{name}.yml",
        },
        "useKustomize": True,
    }
    assert spec["serializeNamespace"] is False
    assert spec["commit"] == {
        "window": "30s",
        "message": {"liveTemplate": "{{.Count}} live", "reconcileTemplate": "r"},
    }
    assert result.documents[1]["spec"]["rules"][0]["objectSelector"] == {"matchLabels": {"a": "b"}}
    provider = obj("GitProvider", {"url": "u", "commit": {"message": {"reconcileTemplate": "p"}}})
    provider["metadata"]["name"] = "repo"
    moved = convert([provider, target(), UPSTREAM_050])
    assert moved.refusals == []
    assert moved.documents[1]["spec"]["commit"] == {"message": {"reconcileTemplate": "p"}}
    assert moved.documents[2]["spec"]["commit"]["message"]["reconcileTemplate"] == "r"  # its own
    assert "commit" not in moved.documents[0]["spec"]
    assert len(convert([provider]).refusals) == 1


@pytest.mark.parametrize(
    ("placement", "field"),
    [
        ({"default": "{kind}/{name}.yaml"}, "spec.placement.default: {kind} has no equivalent"),
        (
            {"byType": {"apps/v1/deployments": "a/{name}.yaml", "apps/v2/deployments": "b.yaml"}},
            "two versions of apps/deployments have different templates",
        ),
        ({"byType": {"deployments": "x.yaml"}}, "is not [group/]version/resource"),
    ],
)
def test_a_placement_ours_cannot_say_is_refused(placement: dict[str, Any], field: str) -> None:
    (refusal,) = convert([target(placement=placement)]).refusals
    assert field in refusal


@pytest.mark.parametrize(
    ("upstream", "ours"),
    [
        ({}, {}),
        ({"onRefusal": "Ignore"}, {}),
        ({"onRefusal": "PushEmptyCommit"}, {"onRefusal": "PushEmptyCommit"}),
        ({"suspend": True}, {"suspend": True}),
        ({"suspend": False}, {"suspend": False}),
        ({"serializeNamespace": True}, {"serializeNamespace": True}),
    ],
)
def test_suspend_on_refusal_and_serialize_namespace(
    upstream: dict[str, Any], ours: dict[str, Any]
) -> None:
    result = convert([target(**upstream)])
    assert result.refusals == []
    spec = result.documents[0]["spec"]
    assert {k: spec[k] for k in ("suspend", "onRefusal", "serializeNamespace") if k in spec} == ours
