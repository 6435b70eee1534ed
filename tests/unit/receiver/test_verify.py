"""Each verifier against real-looking deliveries of its host (R2).

Facts: ../shared/facts/webhooks-git-libs.md §1.1 (GitHub), §1.2/§1.3 (Gitea, Forgejo), §1.4
(GitLab), §1.5 (Bitbucket), §1.6 (Flux's generic-hmac), §4.1 (verification order).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.receiver.verify import Refused, Verified, form_payload, verify
from shared.model.receivers import ReceiverType
from tests.unit.receiver import samples
from tests.unit.receiver.samples import SECRET, Delivery, every_kind, kind_of, mac

ALL = every_kind()


def check(kind: str, d: Delivery, secret: bytes = SECRET) -> Verified | Refused:
    known: ReceiverType = kind  # type: ignore[assignment]
    return verify(known, d.headers, d.body, d.content_type, secret)


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_genuine_delivery_is_verified_and_yields_its_json(name: str) -> None:
    """§1.1-1.6: each host's own signature (or token) over what it signs is accepted."""
    verdict = check(kind_of(name), ALL[name])
    assert verdict == Verified(ALL[name].document)


@pytest.mark.parametrize("name", sorted(ALL))
def test_a_wrong_secret_is_refused(name: str) -> None:
    """R2: a delivery signed (or sent) with another secret is refused."""
    assert isinstance(check(kind_of(name), ALL[name], secret=b"another secret"), Refused)


@pytest.mark.parametrize("name", sorted(ALL))
def test_an_empty_secret_is_refused_even_with_a_matching_signature(name: str) -> None:
    """§1.1: go-github skips the check when secret and signature are both empty; we never do.

    The deliveries are signed with the empty key, so only the empty-secret rule can refuse.
    """
    kind = kind_of(name)
    builders = {
        "github": samples.github,
        "gitea": samples.gitea,
        "bitbucket": samples.bitbucket,
        "generic-hmac": samples.generic,
    }
    if kind == "gitlab":
        delivery = samples.gitlab(samples.gitlab_push(), token=b"")
    elif kind == "azure-devops":
        delivery = samples.azure_devops(samples.azure_devops_push(), password=b"")
    else:
        delivery = builders[kind](samples.gitea_push(), secret=b"")  # type: ignore[operator]
    assert check(kind, delivery, secret=b"") == Refused("the receiver has no usable secret")


@pytest.mark.parametrize(
    ("kind", "header"),
    [
        ("github", "X-Hub-Signature-256"),
        ("gitlab", "X-Gitlab-Token"),
        ("bitbucket", "X-Hub-Signature"),
        ("generic-hmac", "X-Signature"),
        ("azure-devops", "Authorization"),
    ],
)
def test_a_missing_signature_is_refused(kind: str, header: str) -> None:
    """R2/R3: no signature (or token) header means no proof."""
    name = {
        "github": "github-json",
        "gitlab": "gitlab",
        "bitbucket": "bitbucket-cloud",
        "generic-hmac": "generic-hmac",
        "azure-devops": "azure-devops",
    }[kind]
    assert isinstance(check(kind, ALL[name].with_header(header, None)), Refused)


def test_github_form_is_signed_over_the_raw_urlencoded_body() -> None:
    """§1.1: GitHub signs the raw form body; an HMAC of the JSON inside is not GitHub's."""
    delivery = samples.github(samples.github_push(), form=True)
    assert delivery.body.startswith(b"payload=")
    assert check("github", delivery) == Verified(delivery.document)
    over_json = delivery.with_header("X-Hub-Signature-256", "sha256=" + mac(delivery.document))
    assert isinstance(check("github", over_json), Refused)


def test_github_sha1_header_alone_is_not_enough() -> None:
    """R2: GitHub is checked by X-Hub-Signature-256; the legacy SHA-1 header is not accepted."""
    delivery = ALL["github-json"].with_header("X-Hub-Signature-256", None)
    assert "X-Hub-Signature" in delivery.headers
    assert isinstance(check("github", delivery), Refused)


def test_github_signature_hex_is_case_insensitive() -> None:
    """§1.1: go-github decodes the hex, so an upper-case digest is the same signature."""
    delivery = ALL["github-json"]
    upper = "sha256=" + delivery.headers["X-Hub-Signature-256"].removeprefix("sha256=").upper()
    assert isinstance(check("github", delivery.with_header("X-Hub-Signature-256", upper)), Verified)


def test_gitea_form_is_signed_over_the_decoded_payload() -> None:
    """§1.2: Gitea signs the JSON inside ``payload``; GitHub's rule (raw body) is refused."""
    delivery = samples.gitea(samples.gitea_push(), form=True)
    assert check("gitea", delivery) == Verified(delivery.document)
    raw = mac(delivery.body)
    github_style = delivery.with_header("X-Gitea-Signature", raw)
    github_style = github_style.with_header("X-Hub-Signature-256", "sha256=" + raw)
    assert isinstance(check("gitea", github_style), Refused)


def test_gitea_form_without_a_single_payload_field_is_refused() -> None:
    """§1.2: the signed bytes are the ``payload`` field; without exactly one, nothing is signed."""
    delivery = samples.gitea(samples.gitea_push(), form=True)
    doubled = Delivery(
        delivery.headers,
        delivery.body + b"&" + delivery.body,
        delivery.content_type,
        delivery.document,
    )
    assert check("gitea", doubled) == Refused("form delivery without a single payload field")
    empty = Delivery(delivery.headers, b"other=1", delivery.content_type, b"")
    assert isinstance(check("gitea", empty), Refused)


def test_forgejo_signature_wins_over_gitea_and_hub() -> None:
    """§4.1: precedence X-Forgejo-Signature > X-Gitea-Signature > X-Hub-Signature-256."""
    d = samples.gitea(samples.gitea_push(), forgejo=True)
    assert isinstance(check("gitea", d.with_header("X-Gitea-Signature", "0" * 64)), Verified)
    assert isinstance(check("gitea", d.with_header("X-Forgejo-Signature", "0" * 64)), Refused)
    only_hub = d.with_header("X-Forgejo-Signature", None).with_header("X-Gitea-Signature", None)
    assert isinstance(check("gitea", only_hub), Verified)
    bad_hub = only_hub.with_header("X-Hub-Signature-256", "sha256=" + "0" * 64)
    assert isinstance(check("gitea", bad_hub), Refused)


def test_gitea_empty_signature_headers_of_a_hook_without_secret_are_refused() -> None:
    """§1.2: without a hook secret Gitea still sends the headers, empty (``sha256=``)."""
    d = samples.gitea(samples.gitea_push())
    for name in ("X-Gitea-Signature", "X-Gogs-Signature"):
        d = d.with_header(name, "")
    d = d.with_header("X-Hub-Signature-256", "sha256=").with_header("X-Hub-Signature", "sha1=")
    assert check("gitea", d) == Refused("no Gitea/Forgejo signature")


def test_gitlab_token_must_equal_the_secret() -> None:
    """§1.4: X-Gitlab-Token is the plain secret, compared in constant time."""
    good = samples.gitlab(samples.gitlab_push())
    assert isinstance(check("gitlab", good), Verified)
    assert isinstance(check("gitlab", good.with_header("X-Gitlab-Token", "guess")), Refused)
    prefix = good.with_header("X-Gitlab-Token", SECRET.decode()[:-1])
    assert isinstance(check("gitlab", prefix), Refused)


def test_bitbucket_wants_sha256_in_the_sha1_named_header() -> None:
    """§1.5: ``X-Hub-Signature: sha256=<hex>``; a sha1= value, or only the -256 header, fails."""
    d = ALL["bitbucket-cloud"]
    assert isinstance(check("bitbucket", d), Verified)
    sha1 = d.with_header("X-Hub-Signature", "sha1=" + mac(d.body, digest="sha1"))
    assert isinstance(check("bitbucket", sha1), Refused)
    moved = d.with_header("X-Hub-Signature", None).with_header(
        "X-Hub-Signature-256", d.headers["X-Hub-Signature"]
    )
    assert isinstance(check("bitbucket", moved), Refused)


def test_header_names_are_case_insensitive() -> None:
    """RFC 9110 §5.1: field names are case-insensitive; proxies lower-case them."""
    d = ALL["gitea-json"]
    lowered = Delivery(
        {k.lower(): v for k, v in d.headers.items()}, d.body, d.content_type, d.document
    )
    assert isinstance(check("gitea", lowered), Verified)


def test_form_payload_decodes_go_style_escaping() -> None:
    """§1.2 [exp]: parse_qs recovers the exact JSON from a Go ``url.Values.Encode`` body."""
    text = '{"a": "x+y z&w=1%"}'
    body = b"payload=%7B%22a%22%3A+%22x%2By+z%26w%3D1%25%22%7D"
    assert form_payload(body) == text.encode()


# -- properties: any change to a signed body or to its signature is refused ---------------------

#: GitLab and Azure DevOps send the secret itself (a token, basic authentication), no signature
#: over the body: for them only TLS keeps the body as sent.
HMAC_SAMPLES = sorted(n for n in ALL if kind_of(n) not in ("gitlab", "azure-devops"))


def _flip(data: bytes, index: int, xor: int) -> bytes:
    i = index % len(data)
    return data[:i] + bytes([data[i] ^ xor]) + data[i + 1 :]


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(HMAC_SAMPLES),
    index=st.integers(min_value=0),
    xor=st.integers(min_value=1, max_value=255),
)
def test_any_changed_body_byte_is_refused(name: str, index: int, xor: int) -> None:
    """R2: the HMAC covers every byte that carries the JSON (a form's payload, for Gitea)."""
    d = ALL[name]
    changed = Delivery(d.headers, _flip(d.body, index, xor), d.content_type, d.document)
    verdict = check(kind_of(name), changed)
    if isinstance(verdict, Verified):
        # Only a change that decodes to the same signed JSON can pass (form escaping, Gitea).
        assert kind_of(name) == "gitea" and verdict.document == d.document
    else:
        assert isinstance(verdict, Refused)


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(sorted(ALL)),
    index=st.integers(min_value=0),
    xor=st.integers(min_value=1, max_value=127),
)
def test_any_changed_signature_character_is_refused(name: str, index: int, xor: int) -> None:
    """R2: a signature (or token) with any character changed is refused."""
    d, kind = ALL[name], kind_of(name)
    header = {
        "github": "X-Hub-Signature-256",
        "gitlab": "X-Gitlab-Token",
        "bitbucket": "X-Hub-Signature",
        "generic-hmac": "X-Signature",
        "azure-devops": "Authorization",
    }.get(kind)
    names = (
        [header]
        if header
        else ["X-Forgejo-Signature" if "X-Forgejo-Signature" in d.headers else "X-Gitea-Signature"]
    )
    value = d.headers[names[0]]
    if kind == "azure-devops":
        # Basic credentials: the password is the token (the username is not checked).
        password = SECRET.decode()
        i = index % len(password)
        wrong = password[:i] + chr(ord(password[i]) ^ xor) + password[i + 1 :]
        tampered_auth = samples.basic_auth("gitops-reverser", wrong.encode())
        assert isinstance(check(kind, d.with_header(names[0], tampered_auth)), Refused)
        return
    changed = chr(ord(value[index % len(value)]) ^ xor)
    i = index % len(value)
    tampered = value[:i] + changed + value[i + 1 :]
    if tampered.lower() == value.lower():
        return  # the same hex digest in another case is the same signature
    assert isinstance(check(kind, d.with_header(names[0], tampered)), Refused)


@settings(max_examples=100, deadline=None)
@given(
    kind=st.sampled_from(["github", "gitea", "gitlab", "bitbucket", "generic-hmac"]),
    headers=st.dictionaries(st.text(max_size=30), st.text(max_size=80), max_size=6),
    body=st.binary(max_size=300),
    content_type=st.text(max_size=40),
)
def test_random_requests_are_refused_without_raising(
    kind: str, headers: dict[str, str], body: bytes, content_type: str
) -> None:
    """R3: a forged request gets an answer (a refusal), never an exception."""
    verdict = check(kind, Delivery(headers, body, content_type, b""))
    assert isinstance(verdict, Refused)
