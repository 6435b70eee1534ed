"""The render-fidelity gate's decisions (shared.model.render_fidelity): Git's variables kept
where the live value is still their render, a contradicted variable refused by field, and a
file accepted only when its render is the live object."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from shared.model.envsubst import escape
from shared.model.manifest import render
from shared.model.render_fidelity import (
    RENDER_DOES_NOT_MATCH_LIVE,
    RENDER_NOT_VERIFIABLE,
    Mismatch,
    keep_variables,
    render_matches,
)

VALUES = {"REPLICAS": "3", "TAG": "1.2"}


def deployment(replicas: Any, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"image": image}]}}},
    }


IN_GIT = deployment("${REPLICAS}", "repo/web:${TAG}")


def test_variables_whose_render_is_live_are_kept() -> None:
    live = deployment(3, "repo/web:1.2")
    live["metadata"]["labels"] = {"edited": "live"}
    kept = keep_variables(IN_GIT, live, VALUES, "Deployment shop/web")
    assert kept == {**IN_GIT, "metadata": {**IN_GIT["metadata"], "labels": {"edited": "live"}}}
    assert live["spec"]["replicas"] == 3  # the caller's object is not changed


def test_a_live_edit_where_git_holds_a_variable_is_refused_naming_the_field() -> None:
    kept = keep_variables(IN_GIT, deployment(5, "repo/web:1.2"), VALUES, "Deployment shop/web")
    assert isinstance(kept, Mismatch)
    assert kept.reason == RENDER_DOES_NOT_MATCH_LIVE
    assert kept.message.startswith("Deployment shop/web: spec.replicas is '${REPLICAS}' in Git")
    assert "live value is 5" in kept.message
    image = keep_variables(IN_GIT, deployment(3, "repo/web:2.0"), VALUES, "d")
    assert isinstance(image, Mismatch)
    assert "spec.template.spec.containers[0].image" in image.message


def test_a_field_removed_live_takes_its_variable_with_it() -> None:
    live = deployment(3, "repo/web:1.2")
    del live["spec"]["replicas"]
    kept = keep_variables(IN_GIT, live, VALUES, "d")
    assert isinstance(kept, dict)
    assert "replicas" not in kept["spec"]


def test_git_text_the_render_cannot_compute_is_unverifiable() -> None:
    kept = keep_variables(deployment("${UNSET}", "x"), deployment(3, "x"), VALUES, "d")
    assert isinstance(kept, Mismatch)
    assert kept.reason == RENDER_NOT_VERIFIABLE


def test_a_file_is_accepted_only_when_its_render_is_live() -> None:
    live = deployment(3, "repo/web:1.2")
    assert render_matches(render(IN_GIT), live, VALUES, "d") is None
    assert render_matches(render(live), live, VALUES, "d") is None
    other = render_matches(render(IN_GIT), deployment(4, "repo/web:1.2"), VALUES, "d")
    assert isinstance(other, Mismatch)
    assert other.reason == RENDER_DOES_NOT_MATCH_LIVE


def test_live_text_that_looks_like_a_variable_is_refused() -> None:
    script = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}}
    script["data"] = {"run.sh": "echo ${REPLICAS}"}
    found = render_matches(render(script), script, VALUES, "ConfigMap s")
    assert isinstance(found, Mismatch)  # Flux would apply "echo 3"
    script["data"] = {"run.sh": "echo $HOME"}
    unknown = render_matches(render(script), script, VALUES, "ConfigMap s")
    assert isinstance(unknown, Mismatch)
    assert unknown.reason == RENDER_NOT_VERIFIABLE


@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), st.text(), max_size=4))
def test_escaped_data_renders_to_itself(data: dict[str, str]) -> None:
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}
    written = {**live, "data": {k: escape(v) for k, v in data.items()}}
    assert render_matches(render(written), live, VALUES, "c") is None


def test_fields_ignore_differences_names_are_left_out_of_both_steps() -> None:
    """An HPA's replicas (ignoreDifferences ``/spec/replicas``): the writer gives the field
    Git's text, and the gate judges only the other fields."""
    written = deployment("${REPLICAS}", "repo/web:1.2")  # the live object, Git's replicas kept
    kept = keep_variables(IN_GIT, written, VALUES, "d", ["/spec/replicas"])
    assert kept == IN_GIT
    assert isinstance(keep_variables(IN_GIT, written, VALUES, "d"), Mismatch)
    data = render(IN_GIT)
    assert render_matches(data, written, VALUES, "d", ["/spec/replicas"]) is None
    assert render_matches(data, written, VALUES, "d") is not None
    edited = deployment("${REPLICAS}", "repo/web:2.0")  # a field it does not ignore
    refused = keep_variables(IN_GIT, edited, VALUES, "d", ["/spec/replicas"])
    assert isinstance(refused, Mismatch)
    assert "spec.template.spec.containers[0].image" in refused.message
    assert render_matches(data, edited, VALUES, "d", ["/spec/replicas"]) is not None


def test_an_ignored_list_item_and_an_escaped_pointer() -> None:
    image = "/spec/template/spec/containers/0/image"
    written = deployment(3, "repo/web:${TAG}")
    assert keep_variables(IN_GIT, written, VALUES, "d", [image]) == IN_GIT
    assert render_matches(render(IN_GIT), written, VALUES, "d", [image]) is None
    odd = {"a/b~c": "${TAG}"}
    assert keep_variables(odd, {"a/b~c": "x"}, VALUES, "d", ["/a~1b~0c"]) == {"a/b~c": "x"}
    assert isinstance(keep_variables(odd, {"a/b~c": "x"}, VALUES, "d", ["/a/b~c"]), Mismatch)
