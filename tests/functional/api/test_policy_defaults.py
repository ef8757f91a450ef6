"""Every API rule's default, as the API answers it to an admin, a project
manager, a member and a reader.

The table of rules is the policy module's own (:func:`resize_sched.policies.list_rules`):
a rule the API enforces without a case here fails
:func:`test_every_rule_has_a_case`. Who passes a rule is read from its
default check string (:data:`WHO`), so a changed default changes what is
expected. Each case is a real request through the keystone pipeline
(keystonemiddleware's ``AuthTokenFixture`` standing in for Keystone; tokens
carry the implied roles, as Keystone puts them). A caller the default lets
in is not refused (never 403, nor 401 or 5xx); one it refuses gets 403,
naming the rule (or a rule the route asks first). Rules that hide a field
instead of refusing say what they show (``shown``).

The callers: the admin holds its role in another project (``admin-project``);
the manager, member and reader are of ``project-a``, which owns every server.
"""

import dataclasses
import functools
import json
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import webob
from keystonemiddleware import fixture as ks_fixture
from oslo_policy import policy as oslo_policy

from resize_sched import actions, policies
from resize_sched import conf as rs_conf
from resize_sched.api.app import build_app
from resize_sched.context import RequestContext
from resize_sched.db.host_api import COMPUTE_BINARY
from resize_sched.policies import base, quotas
from tests.functional.api.conftest import KEYSTONE
from tests.functional.api.harness import ApiHarness

OWNER = "project-a"

#: Caller -> (user, project, the roles in its token).
CALLERS = {
    "admin": ("root", "admin-project", ("admin", "manager", "member", "reader")),
    "manager": ("mia", OWNER, ("manager", "member", "reader")),
    "member": ("alice", OWNER, ("member", "reader")),
    "reader": ("rita", OWNER, ("reader",)),
}
EVERYONE = frozenset(CALLERS)

#: A default check string -> who passes it (on a resource of OWNER, or the
#: caller's own key pairs).
WHO: dict[str, frozenset[str]] = {
    base.ADMIN: frozenset({"admin"}),
    base.PROJECT_MANAGER_OR_ADMIN: frozenset({"admin", "manager"}),
    base.PROJECT_MEMBER_OR_ADMIN: frozenset({"admin", "manager", "member"}),
    base.PROJECT_READER_OR_ADMIN: EVERYONE,
    base.RULE_ANY: EVERYONE,
    quotas.ADMIN_OR_OWNER: EVERYONE,
}


class Scene:
    """What one caller acts on: made fresh for each caller, on first use, so
    an allowed request (a delete) leaves nothing for the next caller."""

    def __init__(self, api: ApiHarness, caller: str, admin_token: str, member_token: str) -> None:
        self.api = api
        self.caller = caller
        self.user = CALLERS[caller][0]
        self._admin = admin_token
        self._member = member_token

    def _as(self, token: str, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        response = self.api.request(method, "/v2.1" + path, body, token=token, **kw)
        assert response.status_int < 300, (path, response.body)
        return response.json if response.body else None

    @functools.cached_property
    def server(self) -> str:
        """An ACTIVE server of OWNER on h1, with one metadata item ``k``."""
        server = self.api.server(self.api.db.flavor_get("small"), name=f"vm-{self.caller}")
        self._as(self._admin, "PUT", f"/servers/{server.uuid}/metadata/k", {"meta": {"k": "v"}})
        return server.uuid

    @functools.cached_property
    def flavor(self) -> str:
        """A public flavor with the extra spec ``hw:cpu_policy``."""
        name = f"f-{self.caller}"
        self.api.flavor(name)
        self.api.db.flavor_update_extra_specs(name, updates={"hw:cpu_policy": "shared"})
        return name

    @functools.cached_property
    def private(self) -> str:
        """A private flavor shared with project-c."""
        name = f"p-{self.caller}"
        self.api.flavor(name, is_public=False)
        self.api.db.flavor_access_add(name, "project-c")
        return name

    @functools.cached_property
    def aggregate(self) -> int:
        body = {"aggregate": {"name": f"agg-{self.caller}"}}
        aggregate_id = self._as(self._admin, "POST", "/os-aggregates", body)["aggregate"]["id"]
        self._as(
            self._admin,
            "POST",
            f"/os-aggregates/{aggregate_id}/action",
            {"add_host": {"host": "h1"}},
        )
        return aggregate_id

    @functools.cached_property
    def group(self) -> str:
        """A server group of OWNER."""
        body = {"server_group": {"name": f"g-{self.caller}", "policies": ["affinity"]}}
        return self._as(self._member, "POST", "/os-server-groups", body)["server_group"]["id"]

    @functools.cached_property
    def keypair(self) -> str:
        """A key pair of the caller's own user."""
        name = f"kp-{self.caller}"
        self.api.db.keypair_create(self.user, name, "ssh-ed25519 AAAA test", "aa:bb")
        return name

    @functools.cached_property
    def request_id(self) -> str:
        """An action recorded on :attr:`server`, with a failed event on h1."""
        request_id = f"req-{uuid.uuid4()}"
        ctxt = RequestContext(user_id="alice", project_id=OWNER, request_id=request_id)
        actions.common.record_action(self.api.db, ctxt, self.server, "stop")
        self.api.db.action_event_start(self.server, "compute_stop", ["stop"], host="h1")
        self.api.db.action_event_failed(self.server, "compute_stop", ["stop"], "boom", host="h1")
        return request_id

    @functools.cached_property
    def live(self) -> str:
        """A live migration of :attr:`server` in progress; its id."""
        migration = actions.begin_live_migration(self.api.db, self.server, host=None)
        return str(self.api.db.migration_get(migration.uuid).id)


@dataclasses.dataclass(frozen=True)
class Case:
    """One request a rule decides.

    :ivar path: formatted with ``s``, the caller's :class:`Scene`.
    :ivar shown: for a rule that hides a field: whether the answer shows it.
    :ivar first: rules the route asks before this one (a refusal may name them).
    :ivar missing_ok: an allowed caller may get 404 (nothing to find).
    """

    method: str
    path: str
    body: Any = None
    version: str | None = None
    shown: Callable[[webob.Response], bool] | None = None
    first: tuple[str, ...] = ()
    missing_ok: bool = False


def _json(response: webob.Response) -> Any:
    return response.json if response.status_int == 200 else {}


_S = "/servers/{s.server}"
_ACTION = _S + "/action"
_SPECS = "/flavors/{s.flavor}/os-extra_specs"
_AGG = "/os-aggregates/{s.aggregate}"
_QUOTA = f"/os-quota-sets/{OWNER}"
_SMIG = _S + "/migrations"
_LIVE = {"host": None, "block_migration": False, "disk_over_commit": False}
_LIVE_HOST = {**_LIVE, "host": "h2"}
#: The same from 2.25 (no disk_over_commit).
_LIVE_225 = {"host": None, "block_migration": "auto"}


def _server_field(key: str) -> Callable[[webob.Response], bool]:
    return lambda response: key in _json(response).get("server", {})


def _migration_hosts(key: str) -> Callable[[webob.Response], bool]:
    return lambda r: any(m["source_compute"] for m in _json(r).get(key, []))


def _events_traceback(response: webob.Response) -> bool:
    events = _json(response).get("instanceAction", {}).get("events", [])
    assert events or response.status_int != 200
    return any("traceback" in event for event in events)


def _other_projects_groups(response: webob.Response) -> bool:
    return any(g["project_id"] != OWNER for g in _json(response).get("server_groups", []))


#: Rule -> the request it decides.
CASES: dict[str, Case] = {
    # servers
    "os_compute_api:servers:index": Case("GET", "/servers"),
    "os_compute_api:servers:detail": Case("GET", "/servers/detail"),
    "os_compute_api:servers:index:get_all_tenants": Case("GET", "/servers?all_tenants=1"),
    "os_compute_api:servers:detail:get_all_tenants": Case("GET", "/servers/detail?all_tenants=1"),
    "os_compute_api:servers:allow_all_filters": Case("GET", "/servers?host=h1"),
    "os_compute_api:servers:show": Case("GET", _S),
    "os_compute_api:servers:show:host_status": Case(
        "GET", _S, version="2.16", shown=_server_field("host_status")
    ),
    "os_compute_api:servers:show:flavor-extra-specs": Case(
        "GET",
        _S,
        version="2.47",
        shown=lambda r: "extra_specs" in _json(r).get("server", {}).get("flavor", {}),
    ),
    "os_compute_api:os-extended-server-attributes": Case(
        "GET", _S, shown=_server_field("OS-EXT-SRV-ATTR:host")
    ),
    "os_compute_api:servers:create": Case(
        "POST", "/servers", {"server": {"name": "new", "flavorRef": "small"}}
    ),
    "os_compute_api:servers:delete": Case("DELETE", _S),
    "os_compute_api:servers:resize": Case("POST", _ACTION, {"resize": {"flavorRef": "big"}}),
    "os_compute_api:servers:confirm_resize": Case("POST", _ACTION, {"confirmResize": None}),
    "os_compute_api:servers:revert_resize": Case("POST", _ACTION, {"revertResize": None}),
    "os_compute_api:servers:update": Case("PUT", _S, {"server": {"name": "renamed"}}),
    "os_compute_api:servers:stop": Case("POST", _ACTION, {"os-stop": None}),
    "os_compute_api:servers:start": Case("POST", _ACTION, {"os-start": None}),
    "os_compute_api:os-admin-actions:reset_state": Case(
        "POST", _ACTION, {"os-resetState": {"state": "active"}}
    ),
    # server metadata
    "os_compute_api:server-metadata:index": Case("GET", _S + "/metadata"),
    "os_compute_api:server-metadata:show": Case("GET", _S + "/metadata/k"),
    "os_compute_api:server-metadata:create": Case(
        "POST", _S + "/metadata", {"metadata": {"a": "1"}}
    ),
    "os_compute_api:server-metadata:update_all": Case(
        "PUT", _S + "/metadata", {"metadata": {"a": "1"}}
    ),
    "os_compute_api:server-metadata:update": Case("PUT", _S + "/metadata/k", {"meta": {"k": "2"}}),
    "os_compute_api:server-metadata:delete": Case("DELETE", _S + "/metadata/k"),
    # flavors and their extra specs
    "os_compute_api:os-flavor-manage:create": Case(
        "POST", "/flavors", {"flavor": {"name": "new", "vcpus": 1, "ram": 64, "disk": 1}}
    ),
    "os_compute_api:os-flavor-manage:delete": Case("DELETE", "/flavors/{s.flavor}"),
    "os_compute_api:os-flavor-extra-specs:index": Case("GET", _SPECS),
    "os_compute_api:os-flavor-extra-specs:show": Case("GET", _SPECS + "/hw:cpu_policy"),
    "os_compute_api:os-flavor-extra-specs:create": Case(
        "POST", _SPECS, {"extra_specs": {"a": "1"}}
    ),
    "os_compute_api:os-flavor-extra-specs:update": Case("PUT", _SPECS + "/a", {"a": "1"}),
    "os_compute_api:os-flavor-extra-specs:delete": Case("DELETE", _SPECS + "/hw:cpu_policy"),
    "os_compute_api:os-flavor-access": Case("GET", "/flavors/{s.private}/os-flavor-access"),
    "os_compute_api:os-flavor-access:add_tenant_access": Case(
        "POST", "/flavors/{s.private}/action", {"addTenantAccess": {"tenant": "project-d"}}
    ),
    "os_compute_api:os-flavor-access:remove_tenant_access": Case(
        "POST", "/flavors/{s.private}/action", {"removeTenantAccess": {"tenant": "project-c"}}
    ),
    # migrations
    "os_compute_api:os-migrations:index": Case("GET", f"/os-migrations?project_id={OWNER}"),
    "os_compute_api:os-migrations:index:all_projects": Case(
        "GET", "/os-migrations", first=("os_compute_api:os-migrations:index",)
    ),
    "os_compute_api:os-migrations:index:host": Case(
        "GET",
        f"/os-migrations?project_id={OWNER}&instance_uuid={{s.server}}&x={{s.live}}",
        shown=_migration_hosts("migrations"),
    ),
    "os_compute_api:servers:migrations:index": Case("GET", _SMIG, version="2.24"),
    "os_compute_api:servers:migrations:index:host": Case(
        "GET", _SMIG + "?x={s.live}", version="2.80", shown=_migration_hosts("migrations")
    ),
    "os_compute_api:servers:migrations:show": Case("GET", _SMIG + "/{s.live}", version="2.24"),
    "os_compute_api:servers:migrations:force_complete": Case(
        "POST", _SMIG + "/{s.live}/action", {"force_complete": None}, version="2.24"
    ),
    "os_compute_api:servers:migrations:delete": Case(
        "DELETE", _SMIG + "/{s.live}", version="2.24"
    ),
    # the moves
    "os_compute_api:os-migrate-server:migrate": Case("POST", _ACTION, {"migrate": None}),
    "os_compute_api:os-migrate-server:migrate:host": Case(
        "POST", _ACTION, {"migrate": {"host": "h2"}}, version="2.56"
    ),
    "os_compute_api:os-migrate-server:migrate_live": Case(
        "POST", _ACTION, {"os-migrateLive": _LIVE}
    ),
    "os_compute_api:os-migrate-server:migrate_live:host": Case(
        "POST", _ACTION, {"os-migrateLive": _LIVE_HOST}
    ),
    "os_compute_api:os-evacuate": Case("POST", _ACTION, {"evacuate": {}}, version="2.29"),
    "os_compute_api:os-shelve:shelve": Case("POST", _ACTION, {"shelve": None}),
    "os_compute_api:os-shelve:shelve_offload": Case("POST", _ACTION, {"shelveOffload": None}),
    "os_compute_api:os-shelve:unshelve": Case("POST", _ACTION, {"unshelve": None}),
    # instance actions
    "os_compute_api:os-instance-actions:list": Case("GET", _S + "/os-instance-actions"),
    "os_compute_api:os-instance-actions:show": Case(
        "GET", _S + "/os-instance-actions/{s.request_id}"
    ),
    "os_compute_api:os-instance-actions:events": Case(
        "GET",
        _S + "/os-instance-actions/{s.request_id}",
        version="2.62",
        shown=_events_traceback,
    ),
    # hosts, services, hypervisors
    "os_compute_api:os-services:list": Case("GET", "/os-services"),
    "os_compute_api:os-services:update": Case(
        "PUT", "/os-services/disable", {"host": "h9", "binary": COMPUTE_BINARY}, missing_ok=True
    ),
    "os_compute_api:os-hypervisors:list": Case("GET", "/os-hypervisors"),
    "os_compute_api:os-hypervisors:list-detail": Case("GET", "/os-hypervisors/detail"),
    "os_compute_api:os-hypervisors:statistics": Case("GET", "/os-hypervisors/statistics"),
    "os_compute_api:os-hypervisors:show": Case("GET", "/os-hypervisors/1", missing_ok=True),
    "os_compute_api:os-hypervisors:uptime": Case(
        "GET", "/os-hypervisors/1/uptime", missing_ok=True
    ),
    "os_compute_api:os-hypervisors:search": Case(
        "GET", "/os-hypervisors/h1/search", missing_ok=True
    ),
    "os_compute_api:os-hypervisors:servers": Case(
        "GET", "/os-hypervisors/h1/servers", missing_ok=True
    ),
    "os_compute_api:os-hosts:list": Case("GET", "/os-hosts"),
    "os_compute_api:os-hosts:show": Case("GET", "/os-hosts/h1"),
    # NOTE: what would change Placement is refused after the rule: no Placement here.
    "os_compute_api:os-hosts:update": Case("PUT", "/os-hosts/h1", {"maintenance_mode": "enable"}),
    "os_compute_api:os-hosts:reboot": Case("GET", "/os-hosts/h1/reboot"),
    "os_compute_api:os-hosts:shutdown": Case("GET", "/os-hosts/h1/shutdown"),
    "os_compute_api:os-hosts:start": Case("GET", "/os-hosts/h1/startup"),
    "os_compute_api:os-simple-tenant-usage:list": Case("GET", "/os-simple-tenant-usage"),
    "os_compute_api:os-simple-tenant-usage:show": Case("GET", f"/os-simple-tenant-usage/{OWNER}"),
    # aggregates and zones
    "os_compute_api:os-aggregates:index": Case("GET", "/os-aggregates"),
    "os_compute_api:os-aggregates:create": Case(
        "POST", "/os-aggregates", {"aggregate": {"name": "new"}}
    ),
    "os_compute_api:os-aggregates:show": Case("GET", _AGG),
    "os_compute_api:os-aggregates:update": Case("PUT", _AGG, {"aggregate": {"name": "renamed"}}),
    "os_compute_api:os-aggregates:delete": Case("DELETE", _AGG, missing_ok=True),
    "os_compute_api:os-aggregates:add_host": Case(
        "POST", _AGG + "/action", {"add_host": {"host": "h1"}}
    ),
    "os_compute_api:os-aggregates:remove_host": Case(
        "POST", _AGG + "/action", {"remove_host": {"host": "h1"}}
    ),
    "os_compute_api:os-aggregates:set_metadata": Case(
        "POST", _AGG + "/action", {"set_metadata": {"metadata": {"a": "1"}}}
    ),
    "os_compute_api:os-availability-zone:list": Case("GET", "/os-availability-zone"),
    "os_compute_api:os-availability-zone:detail": Case("GET", "/os-availability-zone/detail"),
    # quotas, limits, key pairs
    "os_compute_api:os-quota-sets:show": Case("GET", _QUOTA),
    "os_compute_api:os-quota-sets:detail": Case("GET", _QUOTA + "/detail"),
    "os_compute_api:os-quota-sets:defaults": Case("GET", "/os-quota-sets/project-b/defaults"),
    "os_compute_api:os-quota-sets:update": Case("PUT", _QUOTA, {"quota_set": {"cores": 30}}),
    "os_compute_api:os-quota-sets:delete": Case("DELETE", _QUOTA),
    "os_compute_api:os-quota-class-sets:show": Case("GET", "/os-quota-class-sets/default"),
    "os_compute_api:os-quota-class-sets:update": Case(
        "PUT", "/os-quota-class-sets/default", {"quota_class_set": {"cores": 30}}
    ),
    "os_compute_api:limits": Case("GET", "/limits"),
    "os_compute_api:limits:other_project": Case("GET", "/limits?tenant_id=project-b"),
    "os_compute_api:os-keypairs:index": Case("GET", "/os-keypairs"),
    "os_compute_api:os-keypairs:show": Case("GET", "/os-keypairs/{s.keypair}"),
    "os_compute_api:os-keypairs:create": Case("POST", "/os-keypairs", {"keypair": {"name": "k"}}),
    "os_compute_api:os-keypairs:delete": Case("DELETE", "/os-keypairs/{s.keypair}"),
    # server groups
    "os_compute_api:os-server-groups:create": Case(
        "POST", "/os-server-groups", {"server_group": {"name": "g", "policies": ["affinity"]}}
    ),
    "os_compute_api:os-server-groups:delete": Case("DELETE", "/os-server-groups/{s.group}"),
    "os_compute_api:os-server-groups:index": Case("GET", "/os-server-groups"),
    "os_compute_api:os-server-groups:index:all_projects": Case(
        "GET",
        "/os-server-groups?all_projects=1&x={s.group}",
        version="2.13",
        shown=_other_projects_groups,
    ),
    "os_compute_api:os-server-groups:show": Case("GET", "/os-server-groups/{s.group}"),
}

#: Rules no request of this API consults, and why.
NOT_CONSULTED = {
    "os_compute_api:os-instance-actions:events:details": (
        "Nova's rule of microversion 2.84, above the highest served here (2.80)"
    ),
}

#: The API rules: every documented rule of the policy module.
API_RULES = {
    rule.name: rule
    for rule in policies.list_rules()
    if isinstance(rule, oslo_policy.DocumentedRuleDefault)
}


def test_every_rule_has_a_case() -> None:
    assert set(CASES) | set(NOT_CONSULTED) == set(API_RULES)
    assert not set(CASES) & set(NOT_CONSULTED)
    for name, rule in API_RULES.items():
        assert rule.check_str in WHO, f"{name}: who passes {rule.check_str!r}? add it to WHO"


def _token(tokens: ks_fixture.AuthTokenFixture, caller: str) -> str:
    user, project, roles = CALLERS[caller]
    token_id = uuid.uuid4().hex
    tokens.add_token_data(
        token_id=token_id, user_id=user, project_id=project, role_list=list(roles)
    )
    return token_id


@pytest.fixture
def scenery(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture
) -> tuple[ApiHarness, dict[str, str], Callable[[str], Scene]]:
    """The API, a token per caller, and a maker of each caller's scene.

    Shared by every caller: flavors ``small`` and ``big``, the compute
    service on h1 (up) and a server group of project-b.
    """
    api = keystone_api
    api.flavor("small")
    api.flavor("big", vcpus=2, memory_mb=1024)
    api.db.service_report(host="h1", binary=COMPUTE_BINARY, topic="compute")
    api.db.group_create(name="theirs", project_id="project-b", user_id="bob", policy="affinity")
    callers = {caller: _token(tokens, caller) for caller in CALLERS}

    def scene(caller: str) -> Scene:
        return Scene(api, caller, callers["admin"], callers["member"])

    return api, callers, scene


@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_api_follows_the_default(
    scenery: tuple[ApiHarness, dict[str, str], Callable[[str], Scene]], rule: str
) -> None:
    api, callers, scene = scenery
    case = CASES[rule]
    passes = WHO[API_RULES[rule].check_str]
    answers = {}
    for caller in ("reader", "member", "manager", "admin"):
        path = "/v2.1" + case.path.format(s=scene(caller))
        response = api.request(
            case.method, path, case.body, token=callers[caller], version=case.version
        )
        status = response.status_int
        answers[caller] = status
        assert status not in (401, 500, 502, 503), (caller, status, response.body)
        if case.shown is not None:
            assert case.shown(response) == (caller in passes), (caller, status, response.body)
        elif caller in passes:
            assert status != 403, (caller, response.body)
            assert status != 404 or case.missing_ok, (caller, response.body)
        else:
            assert status == 403, (caller, status, response.body)
            message = response.json["forbidden"]["message"]
            assert any(f"allow {name} to be" in message for name in (rule, *case.first)), message


def _move(api: ApiHarness, token: str, body: dict[str, Any], version: str) -> webob.Response:
    """Ask for a move of a new ACTIVE server of OWNER on h1; a refusal must change nothing."""
    server = api.server(api.db.flavor_get("small"))
    before = api.snapshot()
    path = f"/v2.1/servers/{server.uuid}/action"
    response = api.request("POST", path, body, token=token, version=version)
    if response.status_int == 403:
        assert api.snapshot() == before
        api.assert_no_cast()
    return response


@pytest.mark.parametrize(
    ("body", "version", "cast"),
    [
        ({"migrate": None}, "2.1", "resize_server"),
        ({"migrate": {"host": None}}, "2.56", "resize_server"),
        ({"os-migrateLive": _LIVE_225}, "2.30", "live_migrate_server"),
    ],
    ids=["migrate", "migrate-2.56", "live"],
)
def test_a_project_manager_moves_its_server_without_naming_a_host(
    scenery: tuple[ApiHarness, dict[str, str], Callable[[str], Scene]],
    body: dict[str, Any],
    version: str,
    cast: str,
) -> None:
    """The issue: clients written against Nova 32 and later got 403 here."""
    api, callers, _ = scenery
    response = _move(api, callers["manager"], body, version)
    assert response.status_int == 202, response.body
    sent = api.next_cast()
    assert (sent.method, sent.context.project_id, sent.context.user_id) == (cast, OWNER, "mia")
    migration = api.db.migration_get(sent.kwargs["migration_uuid"])
    assert (migration.source_host, migration.dest_host) == ("h1", None)

    for caller in ("member", "reader"):
        response = _move(api, callers[caller], body, version)
        assert response.status_int == 403, response.body


@pytest.mark.parametrize(
    ("body", "version", "rule"),
    [
        ({"migrate": {"host": "h2"}}, "2.56", "os_compute_api:os-migrate-server:migrate:host"),
        (
            {"os-migrateLive": {**_LIVE_225, "host": "h2"}},
            "2.30",
            "os_compute_api:os-migrate-server:migrate_live:host",
        ),
    ],
    ids=["migrate", "live"],
)
@pytest.mark.parametrize("caller", ["manager", "member", "reader"])
def test_naming_the_host_stays_an_administrators(
    scenery: tuple[ApiHarness, dict[str, str], Callable[[str], Scene]],
    body: dict[str, Any],
    version: str,
    rule: str,
    caller: str,
) -> None:
    api, callers, _ = scenery
    response = _move(api, callers[caller], body, version)
    assert response.status_int == 403, response.body
    assert response.json["forbidden"]["message"] == f"Policy doesn't allow {rule} to be performed."


def _with_policy_file(api: ApiHarness, directory: Path, rules: dict[str, str]) -> None:
    """Rebuild the keystone ``api`` with ``rules`` in its policy file."""
    policy_file = directory / "policy.json"
    policy_file.write_text(json.dumps(rules))
    config = directory / "resize_sched.conf"
    config.write_text(
        f"[keystone_authtoken]\nwww_authenticate_uri = {KEYSTONE}\n"
        f"[oslo_policy]\npolicy_file = {policy_file}\n"
    )
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)])
    api.app = build_app(conf, api.db, api.conductor)


@pytest.mark.parametrize(
    ("plain", "with_host"),
    [
        ({"migrate": None}, {"migrate": {"host": "h2"}}),
        ({"os-migrateLive": _LIVE_225}, {"os-migrateLive": {**_LIVE_225, "host": "h2"}}),
    ],
    ids=["migrate", "live"],
)
def test_a_move_is_checked_against_one_rule(
    scenery: tuple[ApiHarness, dict[str, str], Callable[[str], Scene]],
    tmp_path: Path,
    plain: dict[str, Any],
    with_host: dict[str, Any],
) -> None:
    """As Nova: naming a host asks the ``:host`` rule only, not both."""
    api, callers, _ = scenery
    root = "os_compute_api:os-migrate-server:"
    _with_policy_file(
        api,
        tmp_path,
        {
            f"{root}migrate": "!",
            f"{root}migrate:host": "rule:project_manager_or_admin",
            f"{root}migrate_live": "!",
            f"{root}migrate_live:host": "rule:project_manager_or_admin",
        },
    )
    response = _move(api, callers["manager"], with_host, "2.56")
    # Past the rule: h2 is no compute host.
    assert response.status_int == 400, response.body
    assert "h2" in response.json["badRequest"]["message"]
    response = _move(api, callers["manager"], plain, "2.56")
    assert response.status_int == 403, response.body
    rule = f"{root}migrate" if "migrate" in plain else f"{root}migrate_live"
    assert response.json["forbidden"]["message"] == f"Policy doesn't allow {rule} to be performed."


def test_a_policy_file_overriding_migrate_live_still_decides_a_named_host(
    scenery: tuple[ApiHarness, dict[str, str], Callable[[str], Scene]], tmp_path: Path
) -> None:
    """Nova's upgrade path: migrate_live:host falls back on an overridden migrate_live."""
    api, callers, _ = scenery
    member = callers["member"]
    live = {"os-migrateLive": {**_LIVE_225, "host": "h2"}}
    assert _move(api, member, live, "2.30").status_int == 403
    _with_policy_file(
        api, tmp_path, {"os_compute_api:os-migrate-server:migrate_live": "role:member"}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # oslo.policy's word on the deprecated rule
        response = _move(api, member, live, "2.30")
    assert response.status_int == 400, response.body
    response = _move(api, member, {"os-migrateLive": _LIVE_225}, "2.30")
    assert response.status_int == 202, response.body
    assert api.next_cast().method == "live_migrate_server"
