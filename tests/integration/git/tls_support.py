"""A throwaway certificate authority and a Git host serving HTTPS with a certificate it signed.

For the private-CA tests (issue 24 item 6): a GitProvider whose Secret holds ``ca.crt`` must
reach such a host, and one without must fail with the certificate error. The CA lives only in
the test's temporary folder; nothing here is trusted by the machine.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from sandbox.githost import GitHost

#: The certificates are valid from a day ago for a day ahead: enough for any test run.
VALIDITY = datetime.timedelta(days=1)
USER, PASSWORD = "bot", "s3cret"


@dataclass(frozen=True)
class PrivateCa:
    """A CA's certificate (PEM) and a server certificate chain and key it signed, as files."""

    ca_pem: bytes
    chain: Path
    key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, common)])


def _builder(
    subject: str, issuer: str, public: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - VALIDITY)
        .not_valid_after(now + VALIDITY)
    )


def make_ca(folder: Path) -> PrivateCa:
    """A new CA and a certificate for 127.0.0.1 signed by it, written under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        _builder("test private CA", "test private CA", ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = (
        _builder("127.0.0.1", "test private CA", server_key.public_key())
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    chain = folder / "server.crt"
    chain.write_bytes(server.public_bytes(pem))
    key = folder / "server.key"
    key.write_bytes(
        server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return PrivateCa(ca.public_bytes(pem), chain, key)


@contextmanager
def https_host(folder: Path, ca: PrivateCa) -> Iterator[GitHost]:
    """A Git host on loopback serving HTTPS with ``ca``'s server certificate, wanting basic
    credentials, with one repository ``team/private``."""
    host = GitHost(folder / "host", auth=(USER, PASSWORD), tls=(ca.chain, ca.key))
    host.start()
    try:
        host.create_repo("team/private", files={"README.md": b"behind a private CA\n"})
        yield host
    finally:
        host.stop()
