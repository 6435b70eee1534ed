"""docs/sops.md's examples are held to the code and the CRDs (P3, O5): the GitTarget and
WatchRule decode against our CRDs and the Kustomization against the real Flux CRD with no
unknown field or error; the GitTarget parses to usable recipients; and the file shown under
"What is written" has the same fields, in the same places, as what the product seals."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from sandbox.kube.schema import check
from sandbox.paths import REPO_ROOT
from shared.model.crds import parse_git_target
from shared.model.sops import seal
from tests.integration.docs.test_flux_guide import _schemas

pytestmark = pytest.mark.integration

GUIDE = REPO_ROOT / "docs" / "sops.md"


def _blocks() -> list[list[dict[str, Any]]]:
    text = GUIDE.read_text()
    bodies = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    return [[d for d in yaml.safe_load_all(body) if d] for body in bodies]


def test_the_setup_examples_decode_against_their_crds() -> None:
    """Every object of the setup examples is valid and nothing in it is unknown."""
    schemas = _schemas()
    setup, flux, _written = _blocks()
    for obj in [*setup, *flux]:
        if obj["kind"] == "Kustomization":  # the guide leaves out what docs/flux.md shows
            obj["spec"].update(
                interval="24h",
                path="./clusters",
                prune=False,
                sourceRef={"kind": "GitRepository", "name": "s"},
            )
        checked = check(schemas[(obj["apiVersion"], obj["kind"])], obj, None)
        assert checked.errors == [] and checked.unknown_fields == [], obj["kind"]
    target = parse_git_target(setup[0])
    assert target.encryption is not None and target.encryption.problem == ""
    assert len(target.encryption.recipients) == 1
    assert target.encryption.secret_name == "sops-recipients"


def test_the_written_example_has_the_fields_the_product_writes() -> None:
    """Same top-level fields, same ``sops`` block fields, same encrypted and clear values."""
    (shown,) = _blocks()[2]
    plain = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "team-a"},
        "data": {"password": "aHVudGVyMg=="},
        "type": "Opaque",
    }
    recipient = shown["sops"]["age"][0]["recipient"]
    sealed = seal(
        plain, (recipient,), now=datetime.now(UTC), random=os.urandom, fingerprint_key=b"k"
    )
    assert sorted(sealed) == sorted(shown)
    assert sorted(sealed["sops"]) == sorted(shown["sops"])
    assert sorted(sealed["sops"]["age"][0]) == sorted(shown["sops"]["age"][0])
    assert sealed["metadata"] == shown["metadata"] and sealed["type"] == shown["type"]
    assert shown["data"]["password"].startswith("ENC[AES256_GCM,data:")
    assert shown["sops"]["encrypted_regex"] == sealed["sops"]["encrypted_regex"]
