"""TLS with mutual authentication for the pool: a private CA and one certificate per node.

``make_certs(DIR, nodes)`` writes ``ca.pem`` (the CA certificate every node trusts),
``ca-key.pem`` (the CA's key: keep it off the nodes, it signs new members) and, per node,
``<node>.pem`` / ``<node>-key.pem``.  A node (scheduler, worker or client) loads the CA and its
own pair into Dask's :class:`~distributed.security.Security`; Dask then requires a certificate
signed by the CA from every peer, so a client or worker without one is refused.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from distributed.security import Security

from vdla_hw.errors import BadFileError, UsageError

CA_CERT, CA_KEY = "ca.pem", "ca-key.pem"
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
VALID_DAYS = 825


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "vdla pool"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _load_ca(folder: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate((folder / CA_CERT).read_bytes())
    key = serialization.load_pem_private_key((folder / CA_KEY).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise BadFileError(f"{folder / CA_KEY}: not an EC private key written by vdla pool certs")
    return cert, key


def _new_ca(folder: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name("vdla pool CA")).issuer_name(_name("vdla pool CA"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    (folder / CA_CERT).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(folder / CA_KEY, key)
    return cert, key


def _alt_names(node: str, hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for h in [node, *hosts]:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return names


def make_certs(folder: str | Path, nodes: list[str], hosts: list[str] | None = None) -> list[Path]:
    """Create (or reuse) the CA in ``folder`` and a certificate for each node; returns the files written.

    Every certificate serves both ends of a connection (Dask nodes are servers and clients).
    ``hosts`` are extra names/addresses put in each certificate (Dask does not check them, as
    nodes are usually reached by IP, but other TLS tools may).
    """
    bad = [n for n in nodes if not _NODE.fullmatch(n) or n == "ca"]
    if bad or not nodes:
        raise UsageError(f"bad node name(s) {bad or nodes}: use letters, digits, '.', '_' or '-' (not 'ca')")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if (folder / CA_CERT).exists() and (folder / CA_KEY).exists():
        ca_cert, ca_key = _load_ca(folder)
    else:
        ca_cert, ca_key = _new_ca(folder)
        written.append(folder / CA_CERT)
    now = dt.datetime.now(dt.timezone.utc)
    for node in nodes:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(_name(node)).issuer_name(ca_cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=VALID_DAYS))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                                      x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .add_extension(x509.SubjectAlternativeName(_alt_names(node, hosts or [])), critical=False)
                .sign(ca_key, hashes.SHA256()))
        (folder / f"{node}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(folder / f"{node}-key.pem", key)
        written += [folder / f"{node}.pem", folder / f"{node}-key.pem"]
    return written


def node_security(folder: str | Path, node: str) -> Security:
    """Dask security for ``node``: TLS required, its certificate for every role, the pool's CA trusted."""
    folder = Path(folder)
    ca, cert, key = folder / CA_CERT, folder / f"{node}.pem", folder / f"{node}-key.pem"
    missing = [str(p) for p in (ca, cert, key) if not p.is_file()]
    if missing:
        raise UsageError(f"TLS files missing: {', '.join(missing)}",
                         hint=f"make them with: vdla pool certs {folder} --node {node}")
    return Security(tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key=str(key),
                    tls_scheduler_cert=str(cert), tls_scheduler_key=str(key),
                    tls_worker_cert=str(cert), tls_worker_key=str(key), require_encryption=True)


def security_from(certs: str | Path | None, node: str | None) -> Security | None:
    """:func:`node_security` from ``--certs DIR --node NAME`` options, or None when neither is given."""
    if (certs is None) != (node is None):
        raise UsageError("TLS needs both --certs DIR and --node NAME (the node's certificate in DIR)")
    return node_security(certs, node) if certs is not None and node is not None else None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback interface."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, security: Security | None) -> None:
    """Refuse to listen on a non-loopback interface without TLS and mutual authentication."""
    if not is_loopback(host) and security is None:
        raise UsageError(f"listening on {host!r} (not loopback) needs TLS with mutual authentication",
                         hint="make certificates with `vdla pool certs DIR --node NAME...` and pass "
                              "--certs DIR --node NAME (or bind to 127.0.0.1)")
