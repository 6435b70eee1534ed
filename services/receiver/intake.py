"""One delivery, from path to answer: find the receiver, bound the body, verify, parse, store.

The order is the one the facts recommend (webhooks-git-libs.md §4.1): cap the body, verify
over the raw bytes, and only then parse. Each step either hands the next one its input or
stops with the answer R3 prescribes for what went wrong:

==========================================  =====  ==============
what                                        code   ``status``
==========================================  =====  ==============
no receiver at ``/hook/<digest>``           404    not_found
body over ``Settings.max_body_bytes``       413    too_large
body unreadable (broken chunks)             400    malformed
body slower than the read deadline          408    timeout
no, or a wrong, signature/token             401    unauthorized
not a JSON object after a valid signature   400    malformed
a ping                                      200    pong
an event that is not a push                 202    ignored
a push no GitTarget's branch is named in    202    dropped
a push (or Gitea create/delete), stored     202    stored
a delivery id seen before                   202    duplicate
Redis, or the Kubernetes API, unreachable   503    unavailable
==========================================  =====  ==============

Every verified delivery also records when the GitProvider's receiver last delivered (P14: the
branch workers' idle branches trust their view of the remote while it is recent).

Nothing here logs or returns a secret, a signature, or the body.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from services.receiver import deliveries
from services.receiver.body import BodyError
from services.receiver.cache import TtlCache
from services.receiver.deliveries import Ignored, Malformed, Parsed, Ping, Push
from services.receiver.metrics import ReceiverMetrics
from services.receiver.routing import route
from services.receiver.secrets import SecretSource, SecretUnavailable
from services.receiver.verify import Refused, verify
from shared.model.receivers import TOKEN_KEY, ReceiverRecord
from shared.store.connection import Client
from shared.store.errors import StoreUnavailable
from shared.store.keys import Keys
from shared.store.notices import NoticeWriter
from shared.store.receivers import ReceiverDirectory

LOG = logging.getLogger(__name__)
#: A path digest is a hex SHA-256; anything else cannot name a receiver (no Redis lookup).
DIGEST = re.compile(r"[0-9a-f]{64}")
#: Longest piece of a sender's own text (an event name) echoed in an answer or a log line.
ECHO_CHARS = 100


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer: the code and the JSON body ``{"status": ..., "reason": ...}``."""

    code: int
    status: str
    reason: str

    def body(self) -> dict[str, str]:
        """The JSON body."""
        return {"status": self.status, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Incoming:
    """What the view hands over: headers, content type, and a bounded body reader."""

    headers: Mapping[str, str]  # names lower-cased
    content_type: str
    read_body: Callable[[], bytes]  # raises BodyError


@dataclass(frozen=True, slots=True)
class Stores:
    """The Redis side of the receiver: receiver records in, notices out."""

    directory: ReceiverDirectory
    notices: NoticeWriter

    @classmethod
    def over(cls, client: Client, keys: Keys) -> Stores:
        """Over ``client`` (``receiver_client``: its pool is shared with the audit stores)."""
        return cls(ReceiverDirectory(client, keys), NoticeWriter(client, keys))


class _Stop(Exception):
    """A step decided the answer."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.reason)
        self.answer = answer


def _echo(text: str) -> str:
    return text[:ECHO_CHARS]


#: Answers that are the routine flow of deliveries: logged at DEBUG (they are counted by
#: result in ``gitops_reverser_receiver_deliveries_total`` at any level). A JSON log line
#: costs about a tenth of a stored delivery's CPU, and a busy organisation pushes all day.
ROUTINE = frozenset({"stored", "duplicate", "dropped", "ignored"})


def _log(record: ReceiverRecord, answer: Answer, delivery: str = "") -> None:
    """One line per delivery to a known receiver: who, which delivery, what was answered.

    At INFO for what an operator may have to act on or is setting up (a refusal, a failure,
    a ping); at DEBUG for the routine answers (``ROUTINE``).
    """
    level = logging.DEBUG if answer.status in ROUTINE else logging.INFO
    if not LOG.isEnabledFor(level):
        return
    LOG.log(
        level,
        "delivery %s",
        answer.status,
        extra={
            "provider": record.provider,
            "delivery": _echo(delivery) or None,
            "outcome": answer.status,
            "reason": answer.reason,
        },
    )


class Receiver:
    """Answers hook requests; one per app, shared by its threads (it keeps no request state)."""

    def __init__(
        self,
        stores: Stores,
        secrets: SecretSource,
        clock: Callable[[], float],
        metrics: ReceiverMetrics,
        record_ttl: timedelta,
    ) -> None:
        self._stores = stores
        self._secrets = secrets
        self._clock = clock
        self._metrics = metrics
        self._records: TtlCache[str, ReceiverRecord | None] = TtlCache(record_ttl, clock)

    def receive(self, digest: str, incoming: Incoming) -> Answer:
        """The answer to ``POST /hook/<digest>``, with the delivery's notices stored."""
        record: ReceiverRecord | None = None
        try:
            record = self._record(digest)
            answer = self._handle(record, incoming)
        except _Stop as stop:
            answer = stop.answer
            if record is not None:  # unknown paths are not logged: scanners would flood logs
                _log(record, answer)
        kind = record.type if record is not None else "unknown"
        self._metrics.delivered(kind, answer.status)
        return answer

    def _record(self, digest: str) -> ReceiverRecord:
        if not DIGEST.fullmatch(digest):
            raise _Stop(Answer(404, "not_found", "no receiver at this path"))
        try:
            record = self._records.get(digest, self._stores.directory.lookup)
        except StoreUnavailable as err:
            LOG.warning("receiver lookup failed: %s", err)
            raise _Stop(Answer(503, "unavailable", "the notice store is unreachable")) from err
        if record is None:
            raise _Stop(Answer(404, "not_found", "no receiver at this path"))
        return record

    def _handle(self, record: ReceiverRecord, incoming: Incoming) -> Answer:
        try:
            body = incoming.read_body()
        except BodyError as err:  # too large 413, malformed 400, too slow 408
            raise _Stop(Answer(err.code, err.status, str(err))) from err
        document = self._verify(record, incoming, body)
        try:
            parsed = deliveries.parse(record.type, incoming.headers, document)
        except Malformed as err:
            raise _Stop(Answer(400, "malformed", str(err))) from err
        answer = self._act(record, parsed)
        _log(record, answer, parsed.delivery)
        return answer

    def _verify(self, record: ReceiverRecord, incoming: Incoming, body: bytes) -> bytes:
        secret = self._secret(record)
        verdict = verify(record.type, incoming.headers, body, incoming.content_type, secret)
        if isinstance(verdict, Refused):
            raise _Stop(Answer(401, "unauthorized", verdict.reason))
        return verdict.document

    def _secret(self, record: ReceiverRecord) -> bytes:
        try:
            secret = self._secrets(record.provider_namespace, record.secret_name, TOKEN_KEY)
        except SecretUnavailable as err:
            LOG.warning("receiver secret unreadable: %s", err, extra={"provider": record.provider})
            raise _Stop(Answer(503, "unavailable", "the receiver's Secret is unreadable")) from err
        if not secret:
            LOG.warning(
                "receiver Secret %s/%s has no %r (or it is empty): every delivery is refused",
                record.provider_namespace,
                record.secret_name,
                TOKEN_KEY,
                extra={"provider": record.provider},
            )
            return b""
        return secret

    def _act(self, record: ReceiverRecord, parsed: Parsed) -> Answer:
        if isinstance(parsed, Ping):
            self._delivered(record)
            return Answer(200, "pong", "ping received")
        if isinstance(parsed, Ignored):
            self._delivered(record)
            return Answer(202, "ignored", f"event {_echo(parsed.event)!r} is not a push")
        return self._store(record, parsed)

    def _delivered(self, record: ReceiverRecord) -> None:
        """P14: a verified delivery that stores nothing still shows the receiver delivers.
        Only a hint for the branch workers' idle cost: Redis away leaves the answer as it is
        (a ping is not refused for it; the branches keep their steady tick)."""
        try:
            self._stores.notices.delivered(record.url)
        except StoreUnavailable as err:
            LOG.warning("recording a delivery failed: %s", err, extra={"provider": record.provider})

    def _store(self, record: ReceiverRecord, push: Push) -> Answer:
        routed = route(record, push, self._clock())
        if not routed.notices:
            self._delivered(record)
            return Answer(202, "dropped", routed.reason)
        try:
            fresh = self._stores.notices.store(record.provider, push.delivery, routed.notices)
        except StoreUnavailable as err:
            LOG.warning("storing notices failed: %s", err, extra={"provider": record.provider})
            raise _Stop(Answer(503, "unavailable", "the notice store is unreachable")) from err
        if not fresh:
            return Answer(202, "duplicate", "this delivery was seen before; nothing stored")
        self._metrics.noticed(record.type, len(routed.notices))
        return Answer(202, "stored", routed.reason)
