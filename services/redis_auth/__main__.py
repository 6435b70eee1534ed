"""``python -m services.redis_auth --secret NAME [--create] --out FILE``: the built-in Redis's
password, handed to Redis as a config file (the init container of the chart's Redis pod).

The chart renders no password: a GitOps tool renders the chart again and again, and a random
one would change on every sync under a running Redis (docs/install.md "GitOps-safe"). This
reads key ``--key`` of Secret ``--secret`` in the pod's namespace; with ``--create`` (the
chart's own Secret) a missing one is created first with a random password, create-if-absent
(``shared.kube.install_secrets.ensure_secret_key``: never replaced, so no restart, upgrade or sync
rotates it). It writes ``requirepass <password>`` to ``--out`` (mode 0600), the file the
chart's redis.conf includes: the password is on no command line. The processes read the same
Secret into their environment. Exit 1 with the reason when the Secret cannot be used.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import secrets
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.install_secrets import ensure_secret_key
from shared.settings import Settings

logger = logging.getLogger("services.redis_auth")
#: A password must sit in a redis.conf line and in the userinfo of a redis:// URL unquoted.
SAFE = re.compile(r"[A-Za-z0-9._~-]{16,512}")
#: Random bytes of a generated password (64 hex characters).
PASSWORD_BYTES = 32
#: The annotation on a Secret this created.
GENERATED = "gitopsreverser.io/generated"


class Unusable(Exception):
    """The Secret cannot give Redis a password (said in the message)."""


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m services.redis_auth", description=__doc__)
    parser.add_argument("--secret", required=True, help="the Secret holding the password")
    parser.add_argument("--key", default="password", help="its key (default: password)")
    parser.add_argument("--create", action="store_true", help="create it when it is missing")
    parser.add_argument("--out", required=True, type=Path, help="the redis.conf file to write")
    return parser.parse_args(argv)


def password(settings: Settings, args: argparse.Namespace) -> str:
    """The password the Secret holds (written there first with ``--create``)."""
    client = ClientFactory(settings, time.time).local().client
    where = f"Secret {settings.namespace}/{args.secret}"
    if args.create:
        value = ensure_secret_key(
            client,
            settings.namespace,
            args.secret,
            args.key,
            make=lambda: secrets.token_hex(PASSWORD_BYTES).encode(),
            annotations={GENERATED: "true"},
        )
    else:
        data = CrdReader(client).secret_data(settings.namespace, args.secret)
        if data is None or not data.get(args.key):
            raise Unusable(f"{where} has no key {args.key!r} (redis.auth.existingSecret)")
        value = data[args.key]
    text = value.decode("utf-8", "replace")
    if not SAFE.fullmatch(text):
        raise Unusable(f"{where} key {args.key!r}: 16 to 512 of A-Z a-z 0-9 . _ ~ - only")
    return text


def write_config(path: Path, text: str) -> None:
    """``requirepass`` in a file only its owner reads, replaced whole (never half written)."""
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"requirepass {text}\n")
    partial.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = _parse(argv)
    try:
        write_config(args.out, password(Settings.from_env(), args))
    except (KubeError, Unusable, OSError) as err:
        logger.error("no Redis password: %s", err)
        return 1
    logger.info("Redis password from Secret %s written to %s", args.secret, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
