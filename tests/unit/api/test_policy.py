"""The policy rules: Nova's names, their defaults per role, the sample file."""

import pathlib
import subprocess
import sys
from typing import Any

import pytest
from oslo_policy import policy as oslo_policy

from resize_sched import conf as rs_conf
from resize_sched import policies
from resize_sched.api.policy import Policy
from resize_sched.context import RequestContext

ROOT = pathlib.Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "etc" / "resize_sched" / "policy.yaml.sample"
GENERATOR_CONF = ROOT / "etc" / "resize_sched" / "resize_sched-policy-generator.conf"

OWNER = "project-a"

#: Callers, with the roles Keystone would put in their tokens.
CALLERS = {
    "admin": RequestContext("root", "admin-project", roles=("admin", "member", "reader")),
    "manager": RequestContext("mia", OWNER, roles=("manager", "member", "reader")),
    "member": RequestContext("alice", OWNER, roles=("member", "reader")),
    "reader": RequestContext("rita", OWNER, roles=("reader",)),
    "other": RequestContext("bob", "project-b", roles=("manager", "member", "reader")),
    "nobody": RequestContext("nemo", OWNER, roles=()),
}

ADMIN = {"admin"}
MEMBER = {"admin", "manager", "member"}
READER = {"admin", "manager", "member", "reader"}
MANAGER = {"admin", "manager"}
#: Nova's "@": any caller with a project, whatever its roles and project.
ANYONE = set(CALLERS)
#: The key pair rules: an administrator or the key pair's user (alice).
OWNER_USER = {"admin", "member"}

#: Every rule the API enforces, who passes it by default (on a resource of
#: OWNER), and the route it guards.
TABLE = {
    "os_compute_api:os-migrate-server:migrate": (MANAGER, "POST /servers/{id}/action (migrate)"),
    "os_compute_api:os-migrate-server:migrate:host": (ADMIN, "... migrate with host"),
    "os_compute_api:servers:index": (READER, "GET /servers"),
    "os_compute_api:servers:detail": (READER, "GET /servers/detail"),
    "os_compute_api:servers:index:get_all_tenants": (ADMIN, "GET /servers?all_tenants"),
    "os_compute_api:servers:detail:get_all_tenants": (ADMIN, "GET /servers/detail?all_tenants"),
    "os_compute_api:servers:allow_all_filters": (ADMIN, "GET /servers?host"),
    "os_compute_api:servers:show": (READER, "GET /servers/{id}"),
    "os_compute_api:servers:show:host_status": (ADMIN, "host_status field"),
    "os_compute_api:servers:show:flavor-extra-specs": (READER, "flavor.extra_specs field"),
    "os_compute_api:os-extended-server-attributes": (ADMIN, "OS-EXT-SRV-ATTR fields"),
    "os_compute_api:servers:create": (MEMBER, "POST /servers"),
    "os_compute_api:servers:delete": (MEMBER, "DELETE /servers/{id}"),
    "os_compute_api:servers:resize": (MEMBER, "POST /servers/{id}/action resize"),
    "os_compute_api:servers:confirm_resize": (MEMBER, "POST ... confirmResize"),
    "os_compute_api:servers:revert_resize": (MEMBER, "POST ... revertResize"),
    "os_compute_api:servers:update": (MEMBER, "PUT /servers/{id}"),
    "os_compute_api:servers:stop": (MEMBER, "POST ... os-stop"),
    "os_compute_api:servers:start": (MEMBER, "POST ... os-start"),
    "os_compute_api:server-metadata:index": (READER, "GET /servers/{id}/metadata"),
    "os_compute_api:server-metadata:show": (READER, "GET /servers/{id}/metadata/{key}"),
    "os_compute_api:server-metadata:create": (MEMBER, "POST /servers/{id}/metadata"),
    "os_compute_api:server-metadata:update_all": (MEMBER, "PUT /servers/{id}/metadata"),
    "os_compute_api:server-metadata:update": (MEMBER, "PUT /servers/{id}/metadata/{key}"),
    "os_compute_api:server-metadata:delete": (MEMBER, "DELETE .../metadata/{key}"),
    "os_compute_api:os-admin-actions:reset_state": (ADMIN, "POST ... os-resetState"),
    "os_compute_api:os-flavor-manage:create": (ADMIN, "POST /flavors"),
    "os_compute_api:os-flavor-manage:delete": (ADMIN, "DELETE /flavors/{id}"),
    "os_compute_api:os-flavor-extra-specs:index": (READER, "GET .../os-extra_specs"),
    "os_compute_api:os-flavor-extra-specs:show": (READER, "GET .../os-extra_specs/{key}"),
    "os_compute_api:os-flavor-extra-specs:create": (ADMIN, "POST .../os-extra_specs"),
    "os_compute_api:os-flavor-extra-specs:update": (ADMIN, "PUT .../os-extra_specs/{key}"),
    "os_compute_api:os-flavor-extra-specs:delete": (ADMIN, "DELETE .../os-extra_specs/{key}"),
    "os_compute_api:os-migrations:index": (MANAGER, "GET /os-migrations"),
    "os_compute_api:os-migrations:index:all_projects": (ADMIN, "GET /os-migrations"),
    "os_compute_api:os-migrations:index:host": (ADMIN, "GET /os-migrations (host fields)"),
    "os_compute_api:os-instance-actions:list": (READER, "GET .../os-instance-actions"),
    "os_compute_api:os-instance-actions:show": (READER, "GET .../os-instance-actions/{id}"),
    "os_compute_api:os-instance-actions:events": (ADMIN, "events' traceback and host"),
    "os_compute_api:os-instance-actions:events:details": (ADMIN, "events' details (2.84)"),
    "os_compute_api:servers:migrations:index": (MANAGER, "GET /servers/{id}/migrations"),
    "os_compute_api:servers:migrations:index:host": (ADMIN, "... (host fields)"),
    "os_compute_api:servers:migrations:show": (ADMIN, "GET /servers/{id}/migrations/{id}"),
    "os_compute_api:servers:migrations:force_complete": (MANAGER, "POST .../action"),
    "os_compute_api:servers:migrations:delete": (MANAGER, "DELETE .../migrations/{id}"),
    "os_compute_api:os-migrate-server:migrate_live": (MANAGER, "POST .../action os-migrateLive"),
    "os_compute_api:os-migrate-server:migrate_live:host": (ADMIN, "... os-migrateLive with host"),
    "os_compute_api:os-evacuate": (ADMIN, "POST .../action evacuate"),
    "os_compute_api:os-shelve:shelve": (MEMBER, "POST .../action shelve"),
    "os_compute_api:os-shelve:shelve_offload": (ADMIN, "POST .../action shelveOffload"),
    "os_compute_api:os-shelve:unshelve": (MEMBER, "POST .../action unshelve"),
    "os_compute_api:os-services:list": (ADMIN, "GET /os-services"),
    "os_compute_api:os-services:update": (ADMIN, "PUT /os-services/{id}"),
    "os_compute_api:os-hypervisors:list": (ADMIN, "GET /os-hypervisors"),
    "os_compute_api:os-hypervisors:list-detail": (ADMIN, "GET /os-hypervisors/detail"),
    "os_compute_api:os-hypervisors:show": (ADMIN, "GET /os-hypervisors/{id}"),
    "os_compute_api:os-hypervisors:uptime": (ADMIN, "GET /os-hypervisors/{id}/uptime"),
    "os_compute_api:os-hypervisors:statistics": (ADMIN, "GET /os-hypervisors/statistics"),
    "os_compute_api:os-hosts:list": (ADMIN, "GET /os-hosts"),
    "os_compute_api:os-hosts:show": (ADMIN, "GET /os-hosts/{host}"),
    "os_compute_api:os-hosts:update": (ADMIN, "PUT /os-hosts/{host}"),
    "os_compute_api:os-hosts:reboot": (ADMIN, "GET /os-hosts/{host}/reboot"),
    "os_compute_api:os-hosts:shutdown": (ADMIN, "GET /os-hosts/{host}/shutdown"),
    "os_compute_api:os-hosts:start": (ADMIN, "GET /os-hosts/{host}/startup"),
    "os_compute_api:os-hypervisors:search": (ADMIN, "GET /os-hypervisors/{pattern}/search"),
    "os_compute_api:os-hypervisors:servers": (ADMIN, "GET /os-hypervisors/{pattern}/servers"),
    "os_compute_api:os-simple-tenant-usage:list": (ADMIN, "GET /os-simple-tenant-usage"),
    "os_compute_api:os-simple-tenant-usage:show": (READER, "GET /os-simple-tenant-usage/{id}"),
    "os_compute_api:os-aggregates:index": (ADMIN, "GET /os-aggregates"),
    "os_compute_api:os-aggregates:create": (ADMIN, "POST /os-aggregates"),
    "os_compute_api:os-aggregates:show": (ADMIN, "GET /os-aggregates/{id}"),
    "os_compute_api:os-aggregates:update": (ADMIN, "PUT /os-aggregates/{id}"),
    "os_compute_api:os-aggregates:delete": (ADMIN, "DELETE /os-aggregates/{id}"),
    "os_compute_api:os-aggregates:add_host": (ADMIN, "POST ... add_host"),
    "os_compute_api:os-aggregates:remove_host": (ADMIN, "POST ... remove_host"),
    "os_compute_api:os-aggregates:set_metadata": (ADMIN, "POST ... set_metadata"),
    "os_compute_api:os-availability-zone:list": (ANYONE, "GET /os-availability-zone"),
    "os_compute_api:os-availability-zone:detail": (ADMIN, "GET /os-availability-zone/detail"),
    "os_compute_api:os-quota-sets:show": (READER, "GET /os-quota-sets/{id}"),
    "os_compute_api:os-quota-sets:detail": (READER, "GET /os-quota-sets/{id}/detail"),
    "os_compute_api:os-quota-sets:defaults": (ANYONE, "GET /os-quota-sets/{id}/defaults"),
    "os_compute_api:os-quota-sets:update": (ADMIN, "PUT /os-quota-sets/{id}"),
    "os_compute_api:os-quota-sets:delete": (ADMIN, "DELETE /os-quota-sets/{id}"),
    "os_compute_api:os-quota-class-sets:show": (ADMIN, "GET /os-quota-class-sets/{id}"),
    "os_compute_api:os-quota-class-sets:update": (ADMIN, "PUT /os-quota-class-sets/{id}"),
    "os_compute_api:limits": (ANYONE, "GET /limits"),
    "os_compute_api:limits:other_project": (ADMIN, "GET /limits?tenant_id"),
    "os_compute_api:os-keypairs:index": (OWNER_USER, "GET /os-keypairs"),
    "os_compute_api:os-keypairs:show": (OWNER_USER, "GET /os-keypairs/{name}"),
    "os_compute_api:os-keypairs:create": (OWNER_USER, "POST /os-keypairs"),
    "os_compute_api:os-keypairs:delete": (OWNER_USER, "DELETE /os-keypairs/{name}"),
    "os_compute_api:os-flavor-access": (ADMIN, "GET /flavors/{id}/os-flavor-access"),
    "os_compute_api:os-flavor-access:add_tenant_access": (ADMIN, "... addTenantAccess"),
    "os_compute_api:os-flavor-access:remove_tenant_access": (ADMIN, "... removeTenantAccess"),
    # The group is made in the caller's own project: the admin of another
    # project makes one in its own.
    "os_compute_api:os-server-groups:create": (MEMBER, "POST /os-server-groups"),
    "os_compute_api:os-server-groups:delete": (MEMBER, "DELETE /os-server-groups/{id}"),
    "os_compute_api:os-server-groups:index": (READER, "GET /os-server-groups"),
    "os_compute_api:os-server-groups:index:all_projects": (
        ADMIN,
        "GET /os-server-groups?all_projects",
    ),
    "os_compute_api:os-server-groups:show": (READER, "GET /os-server-groups/{id}"),
}

BASE_RULES = {
    "context_is_admin",
    "project_manager_api",
    "project_member_api",
    "project_reader_api",
    "project_manager_or_admin",
    "project_member_or_admin",
    "project_reader_or_admin",
    "admin_or_owner",
    "admin_api",
    "service_api",
    "service_or_admin",
}


@pytest.fixture(scope="module")
def enforcer() -> Policy:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    return Policy(conf)


def test_every_rule_is_listed_once_and_documented() -> None:
    rules = policies.list_rules()
    names = [rule.name for rule in rules]
    assert len(names) == len(set(names))
    assert set(names) == set(TABLE) | BASE_RULES
    for rule in rules:
        assert rule.description, rule.name
        if rule.name in TABLE:
            assert isinstance(rule, oslo_policy.DocumentedRuleDefault), rule.name
        # Nova's base rules have no scope of their own; every API rule is a project's.
        assert rule.scope_types == (None if rule.name in BASE_RULES else ["project"]), rule.name


@pytest.mark.parametrize("rule", sorted(TABLE))
def test_defaults(enforcer: Policy, rule: str) -> None:
    allowed, _route = TABLE[rule]
    target = {"project_id": OWNER, "user_id": "alice"}
    passed = {name for name, ctxt in CALLERS.items() if enforcer.check(ctxt, rule, target)}
    assert passed == allowed


def test_is_admin_is_the_context_is_admin_rule(enforcer: Policy) -> None:
    assert (
        enforcer.is_admin(RequestContext(user_id="root", project_id="p", roles=("admin",))) is True
    )
    assert (
        enforcer.is_admin(
            RequestContext(user_id="alice", project_id="p", roles=("member", "reader", "manager"))
        )
        is False
    )
    assert (
        enforcer.is_admin(RequestContext(user_id="alice", project_id=None, roles=("admin",)))
        is False
    )


#: Callers whose token names no project, as the auth middleware would build them.
NO_PROJECT = {
    "domain admin": RequestContext(
        "dora", None, roles=("admin", "member", "reader"), domain_id="d"
    ),
    "domain member": RequestContext("dora", None, roles=("member", "reader"), domain_id="d"),
    "system admin": RequestContext(
        "sam", None, roles=("admin", "member", "reader"), system_scope="all"
    ),
    "system reader": RequestContext("sam", None, roles=("reader",), system_scope="all"),
    "unscoped": RequestContext("uma", None, roles=()),
}


@pytest.mark.parametrize("caller", sorted(NO_PROJECT))
def test_a_caller_without_project_passes_no_rule(enforcer: Policy, caller: str) -> None:
    """The root of the domain-token leak: None == None passed project_id:%(project_id)s."""
    ctxt = NO_PROJECT[caller]
    for rule in [*TABLE, *BASE_RULES]:
        for target in (None, {"project_id": None, "user_id": None}, {"project_id": OWNER}):
            assert enforcer.check(ctxt, rule, target) is False, (rule, target)
    assert enforcer.is_admin(ctxt) is False


def test_a_missing_value_never_matches_a_missing_value(tmp_path: pathlib.Path) -> None:
    """An operator's own rule comparing project ids: a None target fails it."""
    (tmp_path / "policy.yaml").write_text(
        '"os_compute_api:servers:index": "project_id:%(project_id)s"\n'
        '"os_compute_api:servers:show": "user_id:%(user_id)s"\n'
    )
    config = tmp_path / "resize_sched.conf"
    config.write_text(f"[oslo_policy]\npolicy_file = {tmp_path / 'policy.yaml'}\n")
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)], default_config_files=[])
    policy = Policy(conf)
    member = CALLERS["member"]
    assert policy.check(member, "os_compute_api:servers:index") is True
    assert policy.check(member, "os_compute_api:servers:index", {"project_id": None}) is False
    nobody = RequestContext(None, OWNER, roles=("reader",))
    assert policy.check(nobody, "os_compute_api:servers:show", {"user_id": None}) is False


def test_the_callers_own_project_is_the_default_target(enforcer: Policy) -> None:
    member: Any = CALLERS["member"]
    assert enforcer.check(member, "os_compute_api:servers:create") is True
    assert enforcer.check(member, "os_compute_api:servers:create", {"project_id": "x"}) is False


def test_sample_policy_file_is_current(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "policy.yaml.sample"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from oslo_policy.generator import generate_sample; generate_sample()",
            "--config-file",
            str(GENERATOR_CONF),
            "--output-file",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    if out.read_text() != SAMPLE.read_text():
        pytest.fail(
            f"{SAMPLE.relative_to(ROOT)} is out of date: run 'tox -e genpolicy' "
            "and commit the result."
        )
