"""Every answer of R3, through the Flask test client, with fakeredis as the store.

Rules: ../shared/spec/behaviour.md R1-R5. Facts: ../shared/facts/webhooks-git-libs.md §1.1-1.6
(deliveries), §3.7 (a chunked body slips past MAX_CONTENT_LENGTH), §3.5 (metrics).
"""

from __future__ import annotations

import io
import json
import logging

import pytest
from gunicorn.http.body import Body, ChunkedReader
from gunicorn.http.unreader import IterUnreader

from services.receiver.deadline import SlowClient
from services.receiver.secrets import SecretUnavailable
from shared.settings import Settings
from tests.unit.receiver import samples
from tests.unit.receiver.rig import LIMIT, Rig, answer
from tests.unit.receiver.samples import SECRET, Delivery, every_kind, kind_of

# -- 202 stored, and what is stored --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(every_kind()))
def test_a_push_is_stored_as_one_notice(rig: Rig, name: str) -> None:
    """R3/R4: a push is answered 202 once its notice is on the branch's stream."""
    path = rig.add(kind_of(name))
    assert answer(rig.post(path, every_kind()[name])) == (202, "stored")
    [notice] = rig.notices()
    assert (notice.provider, notice.ref, notice.after) == (
        "team/gp",
        "refs/heads/main",
        samples.AFTER,
    )
    assert notice.received_at == 1000.0
    assert rig.count(kind_of(name), "stored") == 1


def test_a_replayed_delivery_stores_nothing_new(rig: Rig) -> None:
    """R4: a delivery id seen before stores no second notice, and is still answered 202."""
    path = rig.add("github")
    delivery = samples.github(samples.github_push(), delivery="guid-1")
    assert answer(rig.post(path, delivery)) == (202, "stored")
    assert answer(rig.post(path, delivery)) == (202, "duplicate")
    assert len(rig.notices()) == 1


def test_gitea_create_and_delete_are_pushes(rig: Rig) -> None:
    """R4 (facts §1.2): a Gitea branch delete comes only as ``delete``; it is a hint too."""
    path = rig.add("gitea")
    created = samples.gitea(samples.gitea_ref_event("main"), event="create", delivery="c")
    deleted = samples.gitea(samples.gitea_ref_event("main", sha=None), event="delete", delivery="d")
    assert answer(rig.post(path, created)) == (202, "stored")
    assert answer(rig.post(path, deleted)) == (202, "stored")
    assert [n.after for n in rig.notices()] == [samples.AFTER, "0" * 40]


@pytest.mark.parametrize("ref", ["refs/heads/feature", "refs/tags/v1.0"])
def test_a_ref_no_gittarget_uses_is_dropped(rig: Rig, ref: str) -> None:
    """R4: answered 202 and dropped."""
    path = rig.add("github")
    assert answer(rig.post(path, samples.github(samples.github_push(ref)))) == (202, "dropped")
    assert rig.notices() == [] and rig.notices("feature") == []


# -- the repository check (outside check 8) ------------------------------------------------------


@pytest.mark.parametrize("name", samples.HOSTS)
def test_a_push_naming_its_repository_by_path_alone_is_checked(rig: Rig, name: str) -> None:
    """Outside check 8: a push naming another repository only by path (a Data Center payload
    names only its project key and slug) is dropped; one naming the GitProvider's, in any
    case, stored."""
    path = rig.add(kind_of(name))
    other = samples.named_by_path(name, "PRJ/my-repo")
    assert answer(rig.post(path, other)) == (202, "dropped")
    assert rig.notices() == []
    own = samples.named_by_path(name, "TEAM/Apps")
    assert answer(rig.post(path, own)) == (202, "stored")
    assert len(rig.notices()) == 1


@pytest.mark.parametrize("name", samples.HOSTS)
def test_a_host_push_that_names_no_repository_is_dropped(rig: Rig, name: str) -> None:
    """Outside check 8: no host's push skips the repository check for want of a name."""
    path = rig.add(kind_of(name))
    assert answer(rig.post(path, samples.named_nowhere(name))) == (202, "dropped")
    assert rig.notices() == []
    assert rig.count(kind_of(name), "dropped") == 1


# -- 200 ping, 202 ignored ------------------------------------------------------------------------


def test_a_ping_is_answered_200_and_stores_nothing(rig: Rig) -> None:
    """R3 / facts §1.1: GitHub pings a new hook; answer 2xx and do nothing."""
    path = rig.add("github")
    assert answer(rig.post(path, samples.github_ping())) == (200, "pong")
    assert rig.notices() == []


def test_an_event_that_is_not_a_push_is_202_and_ignored(rig: Rig) -> None:
    """R3: a verified non-push event is accepted and ignored."""
    path = rig.add("github")
    issue = samples.github({"action": "opened", "issue": {"number": 1}}, event="issues")
    assert answer(rig.post(path, issue)) == (202, "ignored")
    assert rig.notices() == []


# -- 404, 405 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/hook/" + "0" * 64, "/hook/not-a-digest", "/hook/", "/", "/hooks/abc", "/hook/" + "A" * 64],
)
def test_an_unknown_path_is_404(rig: Rig, path: str) -> None:
    """R3: unknown path 404 (also a digest of the right form that nobody published)."""
    rig.add("github")
    response = rig.post(path, every_kind()["github-json"])
    assert answer(response) == (404, "not_found")


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_a_wrong_method_is_405(rig: Rig, method: str) -> None:
    """R3: only POST is served on a hook path; the answer says which method is allowed."""
    path = rig.add("github")
    response = rig.client.open(path, method=method)
    assert answer(response) == (405, "method_not_allowed")
    assert response.headers["Allow"] == "POST"


# -- 401 -------------------------------------------------------------------------------------------


def test_no_or_a_bad_signature_is_401(rig: Rig) -> None:
    """R2/R3: no proof, or a wrong one, is 401, and nothing is stored."""
    path = rig.add("github")
    good = samples.github(samples.github_push())
    assert answer(rig.post(path, good.with_header("X-Hub-Signature-256", None))) == (
        401,
        "unauthorized",
    )
    bad = good.with_header("X-Hub-Signature-256", "sha256=" + "1" * 64)
    assert answer(rig.post(path, bad)) == (401, "unauthorized")
    assert rig.notices() == [] and rig.count("github", "unauthorized") == 2


@pytest.mark.parametrize("stored", [None, b""])
def test_a_missing_or_empty_secret_refuses_every_delivery(rig: Rig, stored: bytes | None) -> None:
    """R2: a non-empty secret is required; a Secret without ``token`` verifies nothing."""
    path = rig.add("github")
    key = ("team", "gp-hook", "token")
    if stored is None:
        del rig.secrets.values[key]
    else:
        rig.secrets.values[key] = stored
    unsigned = samples.github(samples.github_push(), secret=b"")
    assert answer(rig.post(path, unsigned)) == (401, "unauthorized")


def test_a_signature_for_another_receiver_type_is_401(rig: Rig) -> None:
    """R2: verification is by the receiver's type; a GitHub delivery to a gitlab receiver fails."""
    path = rig.add("gitlab")
    assert answer(rig.post(path, every_kind()["github-json"])) == (401, "unauthorized")


# -- 413 -------------------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_413(rig: Rig) -> None:
    """R3: a body over the limit is 413 (Content-Length known up front)."""
    path = rig.add("github")
    big = samples.github({"ref": "refs/heads/main", "pad": "x" * LIMIT})
    assert answer(rig.post(path, big)) == (413, "too_large")


def test_a_chunked_body_over_the_limit_is_413(rig: Rig) -> None:
    """R3 / facts §3.7: a chunked body has no Content-Length; the limit still holds."""
    path = rig.add("github")
    big = samples.github({"ref": "refs/heads/main", "pad": "x" * LIMIT})
    response = rig.client.post(
        path,
        input_stream=io.BytesIO(big.body),
        headers={**big.headers, "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert answer(response) == (413, "too_large")


def test_a_chunked_body_within_the_limit_is_read_whole(rig: Rig) -> None:
    """Facts §3.7: under gunicorn a chunked body arrives terminated (wsgi.input_terminated)."""
    path = rig.add("github")
    d = samples.github(samples.github_push())
    response = rig.client.post(
        path,
        input_stream=io.BytesIO(d.body),
        headers={**d.headers, "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert answer(response) == (202, "stored")


def _gunicorn_chunked(raw: bytes) -> Body:
    """The body stream gunicorn hands the app for a chunked request, over ``raw`` bytes."""
    return Body(ChunkedReader(None, IterUnreader([raw])))


def test_a_malformed_chunked_body_is_400_and_no_traceback(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    """W1 (R3): gunicorn's chunk parser refuses a chunk size of ``zz`` while the app reads the
    body. A client error: 400 malformed, logged without a traceback (it was 503 "try again")."""
    path = rig.add("github")
    d = samples.github(samples.github_push())
    with caplog.at_level(logging.DEBUG):
        response = rig.client.post(
            path,
            headers={**d.headers, "Transfer-Encoding": "chunked"},
            environ_overrides={
                "wsgi.input": _gunicorn_chunked(b"zz\r\n" + d.body + b"\r\n0\r\n\r\n"),
                "wsgi.input_terminated": True,
            },
        )
    assert answer(response) == (400, "malformed")
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert rig.notices() == []


def test_a_body_that_stops_arriving_in_time_is_408(rig: Rig) -> None:
    """C5: the worker's read deadline runs out while the app reads the body: 408 timeout."""

    class Trickle(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: object) -> int:
            raise SlowClient("the request took over 10 s to arrive")

    path = rig.add("github")
    d = samples.github(samples.github_push())
    environ = {"wsgi.input": Trickle(), "CONTENT_LENGTH": str(len(d.body))}
    response = rig.client.post(path, headers=d.headers, environ_overrides=environ)
    assert answer(response) == (408, "timeout")
    assert rig.count("github", "timeout") == 1


# -- 400 -------------------------------------------------------------------------------------------


def test_malformed_json_after_a_valid_signature_is_400(rig: Rig) -> None:
    """R3: the signature is good, the content is not JSON: 400, never 500."""
    path = rig.add("generic-hmac")
    body = b"{not json"
    d = Delivery({"X-Signature": "sha256=" + samples.mac(body)}, body, "application/json", body)
    assert answer(rig.post(path, d)) == (400, "malformed")


def test_a_github_form_without_payload_is_400(rig: Rig) -> None:
    """Facts §1.1: the JSON of a form delivery is the ``payload`` field; without it, 400."""
    path = rig.add("github")
    body = b"other=1"
    d = Delivery(
        {
            "X-GitHub-Event": "push",
            "Content-Type": samples.FORM_TYPE,
            "X-Hub-Signature-256": "sha256=" + samples.mac(body),
        },
        body,
        samples.FORM_TYPE,
        b"",
    )
    assert answer(rig.post(path, d)) == (400, "malformed")


# -- 503 -------------------------------------------------------------------------------------------


def test_redis_unreachable_is_503_and_not_ready(rig: Rig) -> None:
    """R3: Redis unreachable 503; /readyz is 503 while Redis is unreachable."""
    path = rig.add("github")
    assert answer(rig.client.get("/readyz")) == (200, "ok")
    rig.server.connected = False
    assert answer(rig.post(path, every_kind()["github-json"])) == (503, "unavailable")
    assert answer(rig.client.get("/readyz")) == (503, "unavailable")
    assert answer(rig.client.get("/healthz")) == (200, "ok")
    rig.server.connected = True
    assert answer(rig.post(path, every_kind()["github-json"])) == (202, "stored")


def test_the_kubernetes_api_unreachable_is_503(rig: Rig) -> None:
    """R5: the Secret cannot be read now; the host may retry."""
    path = rig.add("github")
    rig.secrets.failure = SecretUnavailable("connection refused")
    assert answer(rig.post(path, every_kind()["github-json"])) == (503, "unavailable")


def test_an_unexpected_failure_is_a_logged_503_not_a_500(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    """R3: never a 500; the failure is logged with its traceback."""
    path = rig.add("github")
    rig.secrets.failure = RuntimeError("a bug")
    with caplog.at_level(logging.ERROR):
        assert answer(rig.post(path, every_kind()["github-json"])) == (503, "unavailable")
    assert any(r.exc_info for r in caplog.records)


def test_routine_answers_log_at_debug_and_the_rest_at_info(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    """O2: every answer to a known receiver is one line with provider, delivery and outcome;
    a refusal or a ping at INFO, the routine flow (stored, duplicate, ...) at DEBUG."""
    path = rig.add("github")
    stored = samples.github(samples.github_push(), delivery="d-1")
    with caplog.at_level(logging.DEBUG):
        rig.post(path, stored)
        rig.post(path, stored)
        rig.post(path, stored.with_header("X-Hub-Signature-256", "sha256=" + "0" * 64))
        rig.post(path, samples.github_ping())
    lines = [
        (r.levelname, getattr(r, "outcome", None), getattr(r, "provider", None))
        for r in caplog.records
    ]
    assert lines == [
        ("DEBUG", "stored", "team/gp"),
        ("DEBUG", "duplicate", "team/gp"),
        ("INFO", "unauthorized", "team/gp"),
        ("INFO", "pong", "team/gp"),
    ]
    caplog.clear()
    with caplog.at_level(logging.INFO):
        rig.post(path, samples.github(samples.github_push(), delivery="d-2"))
    assert caplog.records == [], "a stored delivery writes no line at INFO"
    assert rig.count("github", "stored") == 2, "but it is counted"


# -- R5: secrets -----------------------------------------------------------------------------


def test_the_secret_is_cached_for_the_configured_time(rig: Rig) -> None:
    """R5: Secrets are read with a short cache (Settings.secret_cache, default 10 s)."""
    path = rig.add("gitlab")
    for i in range(3):
        rig.post(path, samples.gitlab(samples.gitlab_push(), delivery=f"g{i}"))
    assert rig.secrets.reads == 1
    rig.secrets.values[("team", "gp-hook", "token")] = b"rotated"
    old = samples.gitlab(samples.gitlab_push(), delivery="g-old")
    assert answer(rig.post(path, old)) == (202, "stored")  # still cached
    rig.now[0] += Settings().secret_cache.total_seconds()
    assert answer(rig.post(path, samples.gitlab(samples.gitlab_push(), delivery="g-late"))) == (
        401,
        "unauthorized",
    )
    assert rig.secrets.reads == 2


def test_no_secret_reaches_logs_or_redis(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    """R5: the token travels in clear in X-Gitlab-Token; it is never logged or stored."""
    path = rig.add("gitlab")
    with caplog.at_level(logging.DEBUG):
        rig.post(path, samples.gitlab(samples.gitlab_push()))
        rig.post(path, samples.gitlab(samples.gitlab_push()).with_header("X-Gitlab-Token", "x"))
        rig.post(path, every_kind()["github-json"])
    secret = SECRET.decode()
    logged = "\n".join(r.getMessage() + json.dumps(r.__dict__, default=str) for r in caplog.records)
    assert logged and secret not in logged
    readers = {
        "set": rig.redis.smembers,
        "string": rig.redis.get,
        "stream": rig.redis.xrange,
        "zset": lambda key: rig.redis.zrange(key, 0, -1),
    }
    for key in rig.redis.scan_iter("*"):
        dumped = json.dumps(readers[rig.redis.type(key)](key), default=sorted)
        assert secret not in key and secret not in dumped


# -- health, readiness, metrics ------------------------------------------------------------


def test_metrics_are_served(rig: Rig) -> None:
    """R1 / facts §3.5: /metrics is the Prometheus text exposition."""
    response = rig.client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain")


def test_deliveries_are_counted_by_type_and_result(rig: Rig) -> None:
    """O1: deliveries by type and result, unknown paths under type ``unknown``."""
    path = rig.add("gitea")
    rig.post(path, every_kind()["gitea-json"])
    rig.post("/hook/" + "f" * 64, every_kind()["gitea-json"])
    assert rig.count("gitea", "stored") == 1
    assert rig.count("unknown", "not_found") == 1
    notices = rig.registry.get_sample_value(
        "gitops_reverser_receiver_notices_total", {"type": "gitea"}
    )
    assert notices == 1


# -- P14: when the receiver last delivered ---------------------------------------------------------


def test_every_verified_delivery_records_that_the_receiver_delivers(rig: Rig) -> None:
    """P14: a stored push, a ping, an ignored event, a push to a branch nothing mirrors and a
    replayed delivery each record when the GitProvider's receiver last delivered; a delivery
    that fails its signature records nothing."""
    from shared.store.notice_reader import NoticeReader
    from tests.unit.receiver.rig import REPO_URL

    reader = NoticeReader(rig.redis, rig.keys)
    key = rig.keys.delivered(REPO_URL)
    path = rig.add("github")
    bad = samples.github(samples.github_push(), secret=b"not-the-secret")
    assert answer(rig.post(path, bad)) == (401, "unauthorized")
    assert reader.delivered_at(REPO_URL) is None, "an unverified delivery proves nothing"
    other_branch = samples.github(samples.github_push(ref="refs/heads/other"), delivery="gh-2")
    issue = samples.github({"action": "opened"}, event="issues", delivery="gh-3")
    for delivery, expected in (
        (samples.github(samples.github_push(), delivery="gh-1"), (202, "stored")),
        (samples.github(samples.github_push(), delivery="gh-1"), (202, "duplicate")),
        (samples.github_ping(), (200, "pong")),
        (issue, (202, "ignored")),
        (other_branch, (202, "dropped")),
    ):
        rig.redis.delete(key)
        assert answer(rig.post(path, delivery)) == expected
        recorded = reader.delivered_at(REPO_URL)
        assert recorded is not None and recorded > 0, expected
        assert rig.redis.ttl(key) > 0, "the record ages out with the replay guards"
