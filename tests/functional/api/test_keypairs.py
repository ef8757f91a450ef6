"""``/v2.1/os-keypairs`` and ``key_name`` on servers, over the API and a real database."""

import base64
import hashlib
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness

KEYPAIRS = "/v2.1/os-keypairs"


def _public_key() -> str:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    raw = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return raw.decode() + " me@example"


def _md5(public_key: str) -> str:
    digest = hashlib.md5(base64.b64decode(public_key.split()[1])).hexdigest()  # noqa: S324
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def _create(api: ApiHarness, body: dict[str, Any], token: str = ALICE, **kw: Any) -> Any:
    return api.request("POST", KEYPAIRS, {"keypair": body}, token=token, **kw)


def test_import_show_list_delete(api: ApiHarness) -> None:
    public = _public_key()
    created = _create(api, {"name": "mine", "public_key": public})
    assert created.status_int == 200
    body = created.json["keypair"]
    assert body == {
        "name": "mine",
        "public_key": public,
        "fingerprint": _md5(public),
        "user_id": "alice",
    }
    shown = api.request("GET", f"{KEYPAIRS}/mine", token=ALICE).json["keypair"]
    assert (shown["name"], shown["user_id"], shown["deleted"]) == ("mine", "alice", False)
    assert shown["fingerprint"] == _md5(public)
    assert isinstance(shown["id"], int)
    listed = api.request("GET", KEYPAIRS, token=ALICE).json
    assert listed == {
        "keypairs": [
            {"keypair": {"name": "mine", "public_key": public, "fingerprint": _md5(public)}}
        ]
    }
    # Another user sees none of it.
    assert api.request("GET", KEYPAIRS, token=BOB).json == {"keypairs": []}
    assert api.request("GET", f"{KEYPAIRS}/mine", token=BOB).status_int == 404
    assert api.request("DELETE", f"{KEYPAIRS}/mine", token=ALICE).status_int == 202
    assert api.request("GET", f"{KEYPAIRS}/mine", token=ALICE).status_int == 404


def test_generated_key_pairs_from_2_2(api: ApiHarness) -> None:
    ssh = _create(api, {"name": "gen"}, version="2.2")
    assert ssh.status_int == 201
    body = ssh.json["keypair"]
    assert body["type"] == "ssh"
    assert body["private_key"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert body["fingerprint"] == _md5(body["public_key"])
    private = serialization.load_pem_private_key(body["private_key"].encode(), None)
    assert (
        body["public_key"].split()[1]
        == (
            private.public_key()
            .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
            .decode()
            .split()[1]
        )
    )
    stored = api.request("GET", f"{KEYPAIRS}/gen", token=ALICE, version="2.2").json
    assert "private_key" not in stored["keypair"]
    x509 = _create(api, {"name": "cert", "type": "x509"}, version="2.2").json["keypair"]
    assert x509["type"] == "x509"
    assert x509["public_key"].startswith("-----BEGIN CERTIFICATE-----")
    assert len(x509["fingerprint"].split(":")) == 20
    assert api.request("DELETE", f"{KEYPAIRS}/cert", token=ALICE, version="2.2").status_int == 204


def test_admin_acts_for_a_user_from_2_10(api: ApiHarness) -> None:
    created = _create(api, {"name": "for-bob", "user_id": "bob"}, token=ADMIN, version="2.10")
    assert created.status_int == 201
    assert created.json["keypair"]["user_id"] == "bob"
    assert api.request("GET", f"{KEYPAIRS}/for-bob", token=BOB).status_int == 200
    listed = api.request("GET", f"{KEYPAIRS}?user_id=bob", token=ADMIN, version="2.10").json
    assert [k["keypair"]["name"] for k in listed["keypairs"]] == ["for-bob"]
    before = api.snapshot()
    refused = _create(api, {"name": "x", "user_id": "bob"}, token=ALICE, version="2.10")
    assert refused.status_int == 403
    assert (
        api.request("GET", f"{KEYPAIRS}?user_id=bob", token=ALICE, version="2.10").status_int
        == 403
    )
    assert api.snapshot() == before


def test_paging_from_2_35(api: ApiHarness) -> None:
    for name in ("a", "b", "c"):
        _create(api, {"name": name, "public_key": _public_key()})
    page = api.request("GET", f"{KEYPAIRS}?limit=2", token=ALICE, version="2.35").json
    assert [k["keypair"]["name"] for k in page["keypairs"]] == ["a", "b"]
    assert "marker=b" in page["keypairs_links"][0]["href"]
    rest = api.request("GET", f"{KEYPAIRS}?limit=2&marker=b", token=ALICE, version="2.35").json
    assert [k["keypair"]["name"] for k in rest["keypairs"]] == ["c"]
    assert (
        api.request("GET", f"{KEYPAIRS}?marker=zz", token=ALICE, version="2.35").status_int == 400
    )


@pytest.mark.parametrize(
    ("body", "version", "status"),
    [
        ({"name": ""}, None, 400),
        ({"name": " padded"}, None, 400),
        ({"name": "bad/name"}, None, 400),
        ({"name": "k" * 256}, None, 400),
        ({"name": "k", "public_key": "ssh-rsa not-base64!"}, None, 400),
        ({"name": "k", "public_key": "garbage"}, None, 400),
        ({"name": "k", "type": "ssh"}, "2.1", 400),
        ({"name": "k", "type": "rsa"}, "2.2", 400),
        ({"name": "k", "type": "x509", "public_key": "not a cert"}, "2.2", 400),
        ({"name": "k", "user_id": "bob"}, "2.9", 400),
        ({"name": "k", "color": "blue"}, None, 400),
        ({"name": "taken"}, None, 409),
    ],
)
def test_create_refusals_change_nothing(
    api: ApiHarness, body: dict[str, Any], version: str | None, status: int
) -> None:
    _create(api, {"name": "taken", "public_key": _public_key()})
    before = api.snapshot()
    response = _create(api, body, version=version)
    assert response.status_int == status, response.json
    assert api.snapshot() == before


def test_key_pairs_quota(api: ApiHarness) -> None:
    api.db.quota_set_limits("project-a", {"key_pairs": 1})
    assert _create(api, {"name": "one", "public_key": _public_key()}).status_int == 200
    before = api.snapshot()
    refused = _create(api, {"name": "two", "public_key": _public_key()})
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == "Quota exceeded, too many key pairs."
    assert api.snapshot() == before
    # Counted per user: another user of the project still has room.
    assert _create(api, {"name": "two"}, token="carol:project-a").status_int == 200
    detail = api.request("GET", "/v2.1/os-quota-sets/project-a/detail?user_id=alice").json
    assert detail["quota_set"]["key_pairs"] == {"in_use": 1, "limit": 1, "reserved": 0}


def test_key_name_on_server_create(api: ApiHarness) -> None:
    api.flavor("small")
    _create(api, {"name": "mine", "public_key": _public_key()})
    before = api.snapshot()
    body = {"server": {"name": "vm", "flavorRef": "small", "key_name": "nope"}}
    refused = api.request("POST", "/v2.1/servers", body, token=ALICE)
    assert refused.status_int == 400
    assert refused.json["badRequest"]["message"] == "Invalid key_name provided."
    # Another user's key pair is not the caller's.
    body["server"]["key_name"] = "mine"
    assert api.request("POST", "/v2.1/servers", body, token="carol:project-a").status_int == 400
    assert api.snapshot() == before
    api.assert_no_cast()
    created = api.request("POST", "/v2.1/servers", body, token=ALICE)
    assert created.status_int == 202
    assert api.next_cast().method == "build_server"
    server_id = created.json["server"]["id"]
    assert api.db.server_get(server_id).key_name == "mine"
    shown = api.request("GET", f"/v2.1/servers/{server_id}", token=ALICE).json["server"]
    assert shown["key_name"] == "mine"
