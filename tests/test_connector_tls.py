"""The Trilium and Confluence connectors reach an HTTPS server whose CA the system trust store holds.

The test makes its own CA and a server certificate for 127.0.0.1, and serves a minimal ETAPI and a
minimal Confluence REST API over TLS. ``truststore`` reads the operating system's store; on Linux
that is OpenSSL's default location, which ``SSL_CERT_FILE`` points at another bundle, so a
connector given ``SSL_CERT_FILE`` (in its ``env`` table, as passageway.toml would) trusts exactly
the test CA. Without it the same server is refused, so certificate checking is on; only the
Confluence connector can turn it off, with ``VERIFY_TLS=false``.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import sys
from pathlib import Path

import pytest
from aiohttp import web

from passageway.testing.fake_server import CallResult, run_connector, serve

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

TOKEN = "tls-test-token-3c9d"

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="SSL_CERT_FILE is how OpenSSL's store is read on Linux"
)


def _certificate(subject: str, key, issuer_key, issuer_name, *, ca: bool):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """A test CA (ca.pem) and a certificate for 127.0.0.1 it signed (server.pem, server.key)."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "passageway test CA")])
    ca = _certificate("passageway test CA", ca_key, ca_key, ca_name, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _certificate("127.0.0.1", server_key, ca_key, ca_name, ca=False)
    paths = {"ca": folder / "ca.pem", "cert": folder / "server.pem", "key": folder / "server.key"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["cert"].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths["key"].write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


def _app() -> web.Application:
    """The least of each API a ``check`` needs: an empty Trilium and an empty Confluence space."""

    async def notes(request: web.Request) -> web.Response:
        return web.json_response({"results": []})

    async def space(request: web.Request) -> web.Response:
        return web.json_response({"key": request.match_info["key"], "name": "Operations", "type": "global"})

    async def content(request: web.Request) -> web.Response:
        return web.json_response({"results": [], "start": 0, "limit": 100, "size": 0, "_links": {}})

    app = web.Application()
    app.router.add_get("/etapi/notes", notes)
    app.router.add_get("/rest/api/space/{key}", space)
    app.router.add_get("/rest/api/content", content)
    return app


def https_server(pki: dict[str, Path]):
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(pki["cert"], pki["key"])
    return serve(_app(), tls)


def check(module: str, **settings: str) -> CallResult:
    return run_connector([sys.executable, "-m", module], ["check"], {"TOKEN": TOKEN, **settings})


CONNECTORS = {
    "trilium": ("passageway_connector_trilium", {}),
    "confluence": ("passageway_connector_confluence", {"SPACES": "OPS"}),
}


@pytest.mark.parametrize("name", sorted(CONNECTORS))
def test_a_ca_in_the_trust_store_is_trusted_without_turning_checks_off(pki, name):
    module, settings = CONNECTORS[name]
    with https_server(pki) as url:
        trusted = check(module, URL=url, SSL_CERT_FILE=str(pki["ca"]), **settings)
        unknown = check(module, URL=url, **settings)
    assert trusted.code == 0, trusted.stderr
    assert '"ok": true' in trusted.stdout
    assert unknown.code == 1 and unknown.stdout == ""
    assert "certificate" in unknown.stderr and "is not trusted" in unknown.stderr
    assert TOKEN not in trusted.stderr + unknown.stderr


def test_verify_tls_false_reaches_an_untrusted_confluence(pki):
    with https_server(pki) as url:
        result = check("passageway_connector_confluence", URL=url, SPACES="OPS", VERIFY_TLS="false")
    assert result.code == 0, result.stderr
