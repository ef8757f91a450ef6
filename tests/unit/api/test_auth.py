"""The auth middlewares put the right caller in the request."""

import sys
from typing import Any

import pytest
import webob

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched.api import auth, policy
from resize_sched.api.request import CONTEXT_KEY, REQUEST_ID_KEY


def _conf(strategy: str = "noauth2") -> Any:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    conf.set_override("auth_strategy", strategy, group="api")
    return conf


def _seen(middleware: type, headers: dict[str, str]) -> tuple[int, Any]:
    seen: list[Any] = []

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        seen.append(environ[CONTEXT_KEY])
        return webob.Response(status=204)(environ, start_response)

    req = webob.Request.blank("/v2.1/servers", headers=headers)
    req.environ[REQUEST_ID_KEY] = "req-1"
    response = req.get_response(middleware(app, policy.Policy(_conf())))
    return response.status_int, seen[0] if seen else None


@pytest.mark.parametrize(
    ("token", "user", "project", "admin"),
    [
        ("alice:project-a", "alice", "project-a", False),
        ("admin:admin", "admin", "admin", True),
        ("admin:other", "admin", "other", True),
        ("bob", "bob", "bob", False),
    ],
)
def test_noauth2_trusts_the_token(token: str, user: str, project: str, admin: bool) -> None:
    status, ctxt = _seen(auth.NoAuthMiddleware, {"X-Auth-Token": token})
    assert status == 204
    assert (ctxt.user_id, ctxt.project_id, ctxt.is_admin) == (user, project, admin)
    assert ctxt.request_id == "req-1"
    expected = {"admin", "member", "reader"} if admin else {"member", "reader"}
    assert set(ctxt.roles) == expected


def test_noauth2_needs_a_token() -> None:
    status, ctxt = _seen(auth.NoAuthMiddleware, {})
    assert (status, ctxt) == (401, None)


def test_keystone_headers_become_the_context() -> None:
    headers = {
        "X-Identity-Status": "Confirmed",
        "X-User-Id": "u1",
        "X-Project-Id": "p1",
        "X-Roles": "reader, Admin",
    }
    status, ctxt = _seen(auth.KeystoneContextMiddleware, headers)
    assert status == 204
    assert (ctxt.user_id, ctxt.project_id, ctxt.is_admin) == ("u1", "p1", True)
    assert ctxt.roles == ("admin", "reader")
    _, ctxt = _seen(auth.KeystoneContextMiddleware, {**headers, "X-Roles": "member"})
    assert ctxt.is_admin is False
    assert ctxt.roles == ("member",)
    _, ctxt = _seen(auth.KeystoneContextMiddleware, {**headers, "X-Roles": ""})
    assert (ctxt.is_admin, ctxt.roles) == (False, ())


def test_keystone_refuses_an_unconfirmed_identity() -> None:
    status, ctxt = _seen(auth.KeystoneContextMiddleware, {"X-Identity-Status": "Invalid"})
    assert (status, ctxt) == (401, None)


def test_wrap_picks_the_strategy() -> None:
    conf = _conf("noauth2")
    wrapped = auth.wrap(conf, lambda e, s: [], policy.Policy(conf))
    assert isinstance(wrapped, auth.NoAuthMiddleware)
    from keystonemiddleware import auth_token

    conf = _conf("keystone")
    wrapped = auth.wrap(conf, lambda e, s: [], policy.Policy(conf))
    assert isinstance(wrapped, auth_token.AuthProtocol)


def test_keystone_without_keystonemiddleware_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "keystonemiddleware", None)
    conf = _conf("keystone")
    with pytest.raises(exception.ConfigurationError) as caught:
        auth.wrap(conf, lambda e, s: [], policy.Policy(conf))
    assert "pip install keystonemiddleware" in str(caught.value)
    assert "noauth2" in str(caught.value)
