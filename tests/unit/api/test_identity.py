"""The Keystone stand-in (resize_sched.all_in_one.identity) as keystoneauth talks to it."""

import json
from typing import Any

import pytest
import webob

from resize_sched.all_in_one.identity import Endpoint, IdentityApp, User

ADMIN = User("admin", "s3cret", "admin", roles=("admin", "member", "reader"))
DEMO = User("demo", "pw", "demo")
APP = IdentityApp(
    [ADMIN, DEMO],
    catalog=[
        Endpoint("compute", "nova", "http://api.test/v2.1"),
        Endpoint("image", "glance", "/image"),
    ],
)


def _call(method: str, path: str, body: object = None, **headers: str) -> webob.Response:
    req = webob.Request.blank(
        path, method=method, headers=headers, base_url="http://api.test/identity"
    )
    if body is not None:
        req.body = json.dumps(body).encode()
        req.content_type = "application/json"
    return req.get_response(APP)


def _password(user: str, password: str, scope: object = None) -> dict[str, object]:
    auth: dict[str, object] = {
        "identity": {
            "methods": ["password"],
            "password": {
                "user": {"name": user, "domain": {"name": "Default"}, "password": password}
            },
        }
    }
    if scope is not None:
        auth["scope"] = scope
    return {"auth": auth}


def test_version_documents_point_at_v3() -> None:
    root = _call("GET", "/")
    assert root.status_int == 300
    (version,) = root.json["versions"]["values"]
    assert version["id"].startswith("v3.")
    assert version["links"][0]["href"] == "http://api.test/identity/v3/"
    assert _call("GET", "/v3").json["version"]["id"] == version["id"]


def test_password_login_gives_the_noauth_token_and_the_catalog() -> None:
    response = _call(
        "POST",
        "/v3/auth/tokens",
        _password(
            "admin", "s3cret", {"project": {"name": "admin", "domain": {"name": "Default"}}}
        ),
    )
    assert response.status_int == 201
    assert response.headers["X-Subject-Token"] == "admin:admin"
    token = response.json["token"]
    assert token["project"]["id"] == "admin"
    assert {r["name"] for r in token["roles"]} == {"admin", "member", "reader"}
    urls = {
        s["type"]: {e["interface"]: e["url"] for e in s["endpoints"]} for s in token["catalog"]
    }
    assert urls["compute"]["public"] == "http://api.test/v2.1"
    # A relative catalog URL is on the identity's own server.
    assert urls["image"]["internal"] == "http://api.test/image"


def test_member_token_and_unscoped_token() -> None:
    scoped = _call("POST", "/v3/auth/tokens", _password("demo", "pw", {"project": {"id": "demo"}}))
    assert scoped.headers["X-Subject-Token"] == "demo:demo"
    assert {r["name"] for r in scoped.json["token"]["roles"]} == {"member", "reader"}
    unscoped = _call("POST", "/v3/auth/tokens", _password("demo", "pw"))
    assert unscoped.headers["X-Subject-Token"] == "demo"
    assert "catalog" not in unscoped.json["token"]


@pytest.mark.parametrize(
    "body",
    [
        _password("admin", "wrong"),
        _password("nobody", "pw"),
        _password("demo", "pw", {"project": {"name": "admin"}}),
        {"auth": {"identity": {"methods": ["token"], "token": {"id": "admin:admin"}}}},
    ],
    ids=["bad-password", "unknown-user", "foreign-project", "token-method"],
)
def test_refused_logins_are_401(body: object) -> None:
    response = _call("POST", "/v3/auth/tokens", body)
    assert response.status_int == 401
    assert response.json["error"]["code"] == 401
    assert "X-Subject-Token" not in response.headers


def test_malformed_login_is_400() -> None:
    assert _call("POST", "/v3/auth/tokens", {"auth": {}}).status_int == 400


def test_token_validation() -> None:
    ok = _call(
        "GET", "/v3/auth/tokens", **{"X-Auth-Token": "admin:admin", "X-Subject-Token": "demo:demo"}
    )
    assert ok.status_int == 200
    assert ok.json["token"]["user"]["id"] == "demo"
    assert (
        _call(
            "HEAD",
            "/v3/auth/tokens",
            **{"X-Auth-Token": "admin:admin", "X-Subject-Token": "demo:demo"},
        ).status_int
        == 200
    )
    gone = _call(
        "GET", "/v3/auth/tokens", **{"X-Auth-Token": "admin:admin", "X-Subject-Token": "ghost:x"}
    )
    assert gone.status_int == 404
    anonymous = _call("GET", "/v3/auth/tokens", **{"X-Subject-Token": "demo:demo"})
    assert anonymous.status_int == 401


def test_reads_by_id_and_name_and_what_a_member_sees() -> None:
    users = _call("GET", "/v3/users", **{"X-Auth-Token": "admin:admin"}).json["users"]
    assert sorted(u["id"] for u in users) == ["admin", "demo"]
    by_name = _call("GET", "/v3/projects?name=demo", **{"X-Auth-Token": "admin:admin"})
    assert [p["id"] for p in by_name.json["projects"]] == ["demo"]
    assert (
        _call("GET", "/v3/users/demo", **{"X-Auth-Token": "admin:admin"}).json["user"]["name"]
        == "demo"
    )
    assert _call("GET", "/v3/users/ghost", **{"X-Auth-Token": "admin:admin"}).status_int == 404
    # A member sees itself only.
    mine = _call("GET", "/v3/users", **{"X-Auth-Token": "demo:demo"}).json["users"]
    assert [u["id"] for u in mine] == ["demo"]
    assert _call("GET", "/v3/users/admin", **{"X-Auth-Token": "demo:demo"}).status_int == 404
    assert _call("GET", "/v3/users").status_int == 401
    assert (
        _call("POST", "/v3/users", {"user": {}}, **{"X-Auth-Token": "admin:admin"}).status_int
        == 405
    )


def test_the_all_in_one_refuses_keystone_and_prints_no_token(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stand-in's tokens (admin:admin) must never be served beside Keystone."""
    from resize_sched import conf as rs_conf
    from resize_sched import exception
    from resize_sched.all_in_one import AllInOne
    from resize_sched.cmd import all_in_one

    config = tmp_path / "aio.conf"
    config.write_text(
        f"[api]\nauth_strategy = keystone\nbind_port = 0\n"
        f"[all_in_one]\nstate_path = {tmp_path}\nplacement_port = 0\n"
    )
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)], default_config_files=[])
    with pytest.raises(exception.ConfigurationError, match="is for a real deployment"):
        AllInOne(conf)

    assert all_in_one.main(["--config-file", str(config)]) == 1
    out, err = capsys.readouterr()
    assert "auth_strategy = keystone is for a real deployment" in err
    assert "admin:admin" not in out + err
    assert list(tmp_path.iterdir()) == [config]
