"""Key pairs: ``/v2.1/os-keypairs``.

A key pair is a user's, by name, as in Nova: create with ``public_key``
imports it (its fingerprint checked and computed), without generates one and
answers the private key once (never stored). Microversions: 2.2 ``type``
(``ssh`` or ``x509``) and 201/204 statuses, 2.10 ``user_id`` for an
administrator acting for another user, 2.35 ``limit``/``marker`` paging.
Quota ``key_pairs`` counts the user's key pairs, checked before the write
and again after it (Nova's recheck), so two racing creates cannot both pass
the last unit.
"""

import base64
import binascii
import datetime
import hashlib
from typing import TYPE_CHECKING, Any

import webob
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from oslo_log import log as logging

from resize_sched.api import faults, policy, quota_check
from resize_sched.api.request import ApiRequest, empty_response, isotime, json_response, paginate
from resize_sched.db import models
from resize_sched.policies import quotas as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

SSH = "ssh"
X509 = "x509"

_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": r"^(?! )[a-zA-Z0-9. _-]+(?<! )\Z",
}


def _schema(req: ApiRequest) -> dict[str, Any]:
    properties: dict[str, Any] = {"name": _NAME, "public_key": {"type": "string"}}
    if req.version.at_least("2.2"):
        properties["type"] = {"type": "string", "enum": [SSH, X509]}
    if req.version.at_least("2.10"):
        properties["user_id"] = {"type": "string", "minLength": 1, "maxLength": 255}
    return {
        "type": "object",
        "properties": {
            "keypair": {
                "type": "object",
                "properties": properties,
                "required": ["name"],
                "additionalProperties": False,
            }
        },
        "required": ["keypair"],
        "additionalProperties": False,
    }


def _colons(digest: bytes) -> str:
    return ":".join(f"{byte:02x}" for byte in digest)


def fingerprint(public_key: str, key_type: str = SSH) -> str:
    """A public key's fingerprint as Nova computes it (MD5 of an SSH key's
    blob, SHA-1 of an x509 certificate), each byte as two hex digits.

    :raises faults.BadRequest: the key does not parse.
    """
    if key_type == X509:
        try:
            cert = x509.load_pem_x509_certificate(public_key.encode())
        except ValueError as exc:
            raise faults.BadRequest(
                "Keypair data is invalid: failed to generate X509 fingerprint. "
                f"Error message: {exc}"
            ) from None
        return _colons(cert.fingerprint(hashes.SHA1()))  # noqa: S303 - Nova's format
    try:
        serialization.load_ssh_public_key(public_key.strip().encode())
        blob = base64.b64decode(public_key.split()[1], validate=True)
    except (ValueError, IndexError, binascii.Error, TypeError):
        raise faults.BadRequest(
            "Keypair data is invalid: failed to generate fingerprint"
        ) from None
    return _colons(hashlib.md5(blob, usedforsecurity=False).digest())


def generate(name: str, key_type: str) -> tuple[str, str]:
    """A new RSA key pair: (private key PEM, public key or certificate)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    if key_type == X509:
        subject = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256())
        )
        return private, cert.public_bytes(serialization.Encoding.PEM).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, f"{public.decode()} Generated-by-resize-sched"


def _owner(req: ApiRequest, given: str | None = None) -> str:
    """The user whose key pairs a request acts on (``user_id`` from 2.10)."""
    if given is None and req.version.at_least("2.10"):
        given = req.GET.get("user_id")
    return given or req.context.user_id


def _target(req: ApiRequest, user_id: str) -> dict[str, Any]:
    return {"user_id": user_id, "project_id": req.context.project_id}


def view(req: ApiRequest, row: models.KeyPair, *, full: bool = False) -> dict[str, Any]:
    """One key pair: name, key and fingerprint (``type`` from 2.2); with
    ``full`` also what ``GET /os-keypairs/{name}`` adds."""
    body: dict[str, Any] = {
        "name": row.name,
        "public_key": row.public_key,
        "fingerprint": row.fingerprint,
    }
    if req.version.at_least("2.2"):
        body["type"] = row.type
    if full:
        body.update(
            {
                "user_id": row.user_id,
                "id": row.id,
                "created_at": isotime(row.created_at),
                "updated_at": isotime(row.updated_at),
                "deleted": False,
                "deleted_at": None,
            }
        )
    return body


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-keypairs``: the caller's (or, from 2.10, ``user_id``'s) key pairs.

    :returns: ``{"keypairs": [{"keypair": {...}}...]}``, 200 (and
        ``keypairs_links`` from 2.35 when a page is full).
    """
    user_id = _owner(req)
    policy.authorize(req, rules.KEYPAIRS_INDEX, _target(req, user_id))
    rows = state.db.keypair_list(user_id)
    links: list[dict[str, str]] = []
    if req.version.at_least("2.35"):
        rows, links = paginate(req, rows, "name", "os-keypairs")
    body: dict[str, Any] = {"keypairs": [{"keypair": view(req, row)} for row in rows]}
    if links:
        body["keypairs_links"] = links
    return json_response(body)


def show(state: "ApiState", req: ApiRequest, keypair_name: str) -> webob.Response:
    """``GET /os-keypairs/{name}``.

    :raises KeyPairNotFound: the user has none of that name: 404.
    """
    user_id = _owner(req)
    policy.authorize(req, rules.KEYPAIRS_SHOW, _target(req, user_id))
    return json_response(
        {"keypair": view(req, state.db.keypair_get(user_id, keypair_name), full=True)}
    )


def create(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``POST /os-keypairs``: import ``public_key``, or generate a key pair.

    :returns: ``{"keypair": {...}}`` (``private_key`` when generated), 200
        (201 from 2.2).
    :raises faults.BadRequest: a bad name or type, a key that does not parse.
    :raises faults.Forbidden: the policy refuses, or quota ``key_pairs`` is used up.
    :raises KeyPairExists: the user has one of that name: 409.
    """
    body = req.validated_body(_schema(req))["keypair"]
    user_id = _owner(req, body.get("user_id"))
    policy.authorize(req, rules.KEYPAIRS_CREATE, _target(req, user_id))
    key_type = body.get("type", SSH)
    name = body["name"]
    private = None
    public = body.get("public_key")
    if public is None:
        private, public = generate(name, key_type)
    printed = fingerprint(public, key_type)
    _check_quota(state, req, user_id, before=True)
    row = state.db.keypair_create(user_id, name, public, printed, key_type)
    try:
        _check_quota(state, req, user_id, before=False)
    except faults.Forbidden:
        state.db.keypair_delete(user_id, name)
        raise
    LOG.info("Key pair %s of user %s %s", name, user_id, "generated" if private else "imported")
    created = view(req, row)
    created["user_id"] = user_id
    if private is not None:
        created["private_key"] = private
    return json_response({"keypair": created}, status=201 if req.version.at_least("2.2") else 200)


def _check_quota(state: "ApiState", req: ApiRequest, user_id: str, *, before: bool) -> None:
    # NOTE: after the write the new key pair is in the count: take it out.
    count = state.db.keypair_count(user_id)
    quota_check.enforce_one(
        state,
        req.context.project_id,
        user_id,
        "key_pairs",
        1,
        count if before else count - 1,
        "Quota exceeded, too many key pairs.",
    )


def delete(state: "ApiState", req: ApiRequest, keypair_name: str) -> webob.Response:
    """``DELETE /os-keypairs/{name}``.

    :returns: 202 (204 from 2.2) without a body.
    :raises KeyPairNotFound: the user has none of that name: 404.
    """
    user_id = _owner(req)
    policy.authorize(req, rules.KEYPAIRS_DELETE, _target(req, user_id))
    state.db.keypair_delete(user_id, keypair_name)
    LOG.info("Key pair %s of user %s deleted", keypair_name, user_id)
    return empty_response(204 if req.version.at_least("2.2") else 202)
