"""Authorization through the policy rules: the defaults on every route, and
what an operator's ``policy.yaml`` changes.

Callers are noauth2's (``admin`` holds admin, member and reader; anyone
else member and reader); a refused request must change nothing.
"""

import json
import os
from pathlib import Path
from typing import Any

import pytest

from resize_sched import conf as rs_conf
from resize_sched.api.app import build_app
from resize_sched.db.host_api import COMPUTE_BINARY
from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness

#: A member of alice's project who does not own her server.
CAROL = "carol:project-a"


def _with_policy(
    api: ApiHarness, directory: Path, rules: dict[str, str], *, beside: bool = False
) -> Path:
    """Rebuild ``api``'s application with ``rules`` in a policy file.

    :param beside: name the file ``policy.yaml`` next to the config file and
        leave ``[oslo_policy] policy_file`` at its default, instead of giving
        its path.
    :returns: the policy file.
    """
    policy_file = directory / ("policy.yaml" if beside else "overrides.yaml")
    # NOTE: JSON is YAML.
    policy_file.write_text(json.dumps(rules))
    config = directory / "resize_sched.conf"
    text = "[api]\nauth_strategy = noauth2\n"
    if not beside:
        text += f"[oslo_policy]\npolicy_file = {policy_file}\n"
    config.write_text(text)
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)])
    api.app = build_app(conf, api.db, api.conductor)
    return policy_file


@pytest.fixture
def world(api: ApiHarness) -> dict[str, Any]:
    """Alice's server in VERIFY_RESIZE and one ACTIVE, Bob's, a private flavor."""
    small = api.flavor("small")
    big = api.flavor("big", vcpus=2, memory_mb=1024)
    api.flavor("private", is_public=False)
    api.db.flavor_update_extra_specs("small", updates={"hw:cpu_policy": "shared"})
    resized = api.server(small, name="resized")
    api.verify_resize(resized, big)
    return {
        "active": api.server(small, name="active"),
        "resized": resized,
        "theirs": api.server(small, name="theirs", project_id="project-b", user_id="bob"),
    }


def _refused(api: ApiHarness, method: str, path: str, body: Any, token: str, status: int) -> Any:
    before = api.snapshot()
    response = api.request(method, path, body, token=token)
    assert response.status_int == status, (method, path, response.body)
    assert api.snapshot() == before
    api.assert_no_cast()
    return response


_SPECS = "/v2.1/flavors/small/os-extra_specs"
_NEW_FLAVOR = {"flavor": {"name": "x", "vcpus": 1, "ram": 64, "disk": 0}}


@pytest.mark.parametrize(
    ("method", "path", "body", "token", "status"),
    [
        # Another project's server is not found, whatever the route.
        ("GET", "/servers/{theirs}", None, ALICE, 404),
        ("DELETE", "/servers/{theirs}", None, ALICE, 404),
        ("POST", "/servers/{theirs}/action", {"resize": {"flavorRef": "big"}}, ALICE, 404),
        ("POST", "/servers/{resized}/action", {"confirmResize": None}, BOB, 404),
        ("POST", "/servers/{resized}/action", {"revertResize": None}, BOB, 404),
        # Nor is a private flavor, for a non-admin.
        ("GET", "/flavors/private", None, ALICE, 404),
        ("GET", "/flavors/private/os-extra_specs", None, ALICE, 404),
        # Admin-only routes and filters are 403.
        ("GET", "/servers?all_tenants=1", None, ALICE, 403),
        ("GET", "/servers/detail?all_tenants=1", None, ALICE, 403),
        ("GET", "/servers?host=h1", None, ALICE, 403),
        ("POST", "/flavors", _NEW_FLAVOR, ALICE, 403),
        ("DELETE", "/flavors/big", None, ALICE, 403),
        ("POST", _SPECS.removeprefix("/v2.1"), {"extra_specs": {"a": "1"}}, ALICE, 403),
        ("PUT", "/flavors/small/os-extra_specs/a", {"a": "1"}, ALICE, 403),
        ("DELETE", "/flavors/small/os-extra_specs/hw:cpu_policy", None, ALICE, 403),
        ("GET", "/os-migrations", None, ALICE, 403),
    ],
)
def test_default_rules_across_projects(
    api: ApiHarness, world: dict[str, Any], method: str, path: str, body: Any, token: str, status
) -> None:
    path = "/v2.1" + path.format(**{k: s.uuid for k, s in world.items()})
    _refused(api, method, path, body, token, status)


def test_resize_made_admin_only(api: ApiHarness, world: dict[str, Any], tmp_path: Path) -> None:
    _with_policy(api, tmp_path, {"os_compute_api:servers:resize": "rule:context_is_admin"})
    path = f"/v2.1/servers/{world['active'].uuid}/action"
    response = _refused(api, "POST", path, {"resize": {"flavorRef": "big"}}, ALICE, 403)
    assert response.json["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:servers:resize to be performed."
    )
    # The other rules keep their defaults: alice still confirms her own resize.
    resized = f"/v2.1/servers/{world['resized'].uuid}/action"
    assert api.request("POST", resized, {"confirmResize": None}, token=ALICE).status_int == 204
    assert api.next_cast().method == "confirm_resize"
    # Another project's server is still a 404, not a 403: the lookup comes first.
    theirs = f"/v2.1/servers/{world['theirs'].uuid}/action"
    _refused(api, "POST", theirs, {"resize": {"flavorRef": "big"}}, ALICE, 404)
    assert api.request("POST", path, {"resize": {"flavorRef": "big"}}).status_int == 202
    assert api.next_cast().method == "resize_server"


@pytest.mark.parametrize("action", ["confirmResize", "revertResize"])
def test_confirm_and_revert_disabled_for_everyone(
    api: ApiHarness, world: dict[str, Any], tmp_path: Path, action: str
) -> None:
    _with_policy(
        api,
        tmp_path,
        {
            "os_compute_api:servers:confirm_resize": "!",
            "os_compute_api:servers:revert_resize": "!",
        },
    )
    path = f"/v2.1/servers/{world['resized'].uuid}/action"
    for token in (ALICE, ADMIN):
        _refused(api, "POST", path, {action: None}, token, 403)


def test_a_policy_file_beside_the_config_file_is_read(
    api: ApiHarness, world: dict[str, Any], tmp_path: Path
) -> None:
    _with_policy(
        api, tmp_path, {"os_compute_api:os-flavor-manage:create": "role:member"}, beside=True
    )
    response = api.request("POST", "/v2.1/flavors", _NEW_FLAVOR, token=ALICE)
    assert response.status_int == 200, response.json
    assert api.db.flavor_get(response.json["flavor"]["id"]).name == "x"
    _refused(api, "DELETE", "/v2.1/flavors/big", None, ALICE, 403)


def test_rules_see_the_servers_owner(
    api: ApiHarness, world: dict[str, Any], tmp_path: Path
) -> None:
    _with_policy(
        api,
        tmp_path,
        {"os_compute_api:servers:delete": "rule:context_is_admin or user_id:%(user_id)s"},
    )
    path = f"/v2.1/servers/{world['active'].uuid}"
    _refused(api, "DELETE", path, None, CAROL, 403)
    assert api.request("DELETE", path, token=ALICE).status_int == 204
    assert api.next_cast().method == "delete_server"


def test_show_refused_while_other_projects_stay_404(
    api: ApiHarness, world: dict[str, Any], tmp_path: Path
) -> None:
    _with_policy(api, tmp_path, {"os_compute_api:servers:show": "rule:context_is_admin"})
    _refused(api, "GET", f"/v2.1/servers/{world['active'].uuid}", None, ALICE, 403)
    _refused(api, "GET", f"/v2.1/servers/{world['theirs'].uuid}", None, ALICE, 404)
    assert api.request("GET", f"/v2.1/servers/{world['theirs'].uuid}").status_int == 200
    assert api.request("GET", "/v2.1/servers", token=ALICE).status_int == 200


def test_fields_follow_their_rules(api: ApiHarness, world: dict[str, Any], tmp_path: Path) -> None:
    path = f"/v2.1/servers/{world['active'].uuid}"
    api.db.service_report(host="h1", binary=COMPUTE_BINARY, topic="compute")  # h1 is up

    def shown(token: str) -> dict[str, Any]:
        response = api.request("GET", path, token=token, version="2.61")
        assert response.status_int == 200, response.json
        return response.json["server"]

    def flavor(token: str) -> dict[str, Any]:
        return api.request("GET", "/v2.1/flavors/small", token=token, version="2.61").json[
            "flavor"
        ]

    assert "OS-EXT-SRV-ATTR:host" not in shown(ALICE)
    assert "host_status" not in shown(ALICE)
    assert shown(ALICE)["flavor"]["extra_specs"] == {"hw:cpu_policy": "shared"}
    assert flavor(ALICE)["extra_specs"] == {"hw:cpu_policy": "shared"}
    assert shown(ADMIN)["OS-EXT-SRV-ATTR:host"] == "h1"

    _with_policy(
        api,
        tmp_path,
        {
            "os_compute_api:os-extended-server-attributes": "rule:project_member_or_admin",
            "os_compute_api:servers:show:host_status": "rule:project_member_or_admin",
            "os_compute_api:servers:show:flavor-extra-specs": "rule:context_is_admin",
            "os_compute_api:os-flavor-extra-specs:index": "rule:context_is_admin",
        },
    )
    body = shown(ALICE)
    assert (body["OS-EXT-SRV-ATTR:host"], body["host_status"]) == ("h1", "UP")
    assert "extra_specs" not in body["flavor"]
    assert "extra_specs" not in flavor(ALICE)
    _refused(api, "GET", _SPECS, None, ALICE, 403)
    assert shown(ADMIN)["flavor"]["extra_specs"] == {"hw:cpu_policy": "shared"}


def test_context_is_admin_decides_project_scoping(
    api: ApiHarness, world: dict[str, Any], tmp_path: Path
) -> None:
    _with_policy(api, tmp_path, {"context_is_admin": "role:admin or user_id:alice"})
    response = api.request("GET", f"/v2.1/servers/{world['theirs'].uuid}", token=ALICE)
    assert response.status_int == 200
    assert response.json["server"]["OS-EXT-SRV-ATTR:host"] == "h1"
    assert api.request("GET", "/v2.1/os-migrations", token=ALICE).status_int == 200
    _refused(api, "GET", f"/v2.1/servers/{world['active'].uuid}", None, BOB, 404)


def test_an_edited_policy_file_applies_without_a_restart(
    api: ApiHarness, world: dict[str, Any], tmp_path: Path
) -> None:
    policy_file = _with_policy(api, tmp_path, {})
    path = f"/v2.1/servers/{world['active'].uuid}"
    assert api.request("GET", path, token=ALICE).status_int == 200

    policy_file.write_text(json.dumps({"os_compute_api:servers:show": "!"}))
    # NOTE: oslo.policy re-reads the file when its modification time changes.
    later = policy_file.stat().st_mtime + 10
    os.utime(policy_file, (later, later))
    _refused(api, "GET", path, None, ALICE, 403)


def test_a_policy_file_that_does_not_parse_answers_our_500(
    api: ApiHarness, world: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy_file = _with_policy(api, tmp_path, {})
    policy_file.write_text('"os_compute_api:servers:show": "role:reader"\n  bad: [indent\n')
    later = policy_file.stat().st_mtime + 10
    os.utime(policy_file, (later, later))
    before = api.snapshot()
    for method, path in (
        ("GET", "/v2.1/servers"),
        ("GET", f"/v2.1/servers/{world['active'].uuid}"),
    ):
        with caplog.at_level("ERROR"):
            response = api.request(method, path, token=ALICE)
        assert response.status_int == 500
        assert response.content_type == "application/json"
        request_id = response.headers["x-openstack-request-id"]
        fault = response.json["computeFault"]
        assert fault["code"] == 500
        assert request_id in fault["message"]
        assert "PolicyFileInvalid" in fault["message"]
        logged = [r.getMessage() for r in caplog.records if "does not parse" in r.getMessage()]
        assert any(str(policy_file) in line and "line 2" in line for line in logged), logged
        caplog.clear()
    assert api.snapshot() == before

    # Fixed, it applies again without a restart.
    policy_file.write_text("{}")
    os.utime(policy_file, (later + 10, later + 10))
    assert api.request("GET", "/v2.1/servers", token=ALICE).status_int == 200
