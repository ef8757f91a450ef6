"""Our rules against Nova 34's (2026.2) defaults, rule by rule, and the
policy reference saying where they differ.

``NOVA_34`` is a fact carried over from Nova's ``nova/policies/*.py``
(openstack/nova master of 2026-08-21, 33.0.0-373-g00a030403f, the 2026.2
cycle that becomes 34.0.0): each rule's check string and scope types.
"""

import pathlib

from oslo_policy import policy as oslo_policy

from resize_sched import policies
from resize_sched.policies import live_migrate

ROOT = pathlib.Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "doc" / "reference" / "policy.rst"

#: Nova 34's default of each of our rules: (check string, scope types).
NOVA_34: dict[str, tuple[str, list[str] | None]] = {
    "context_is_admin": ("role:admin", None),
    "admin_or_owner": ("is_admin:True or project_id:%(project_id)s", None),
    "admin_api": ("is_admin:True", None),
    "project_manager_api": ("role:manager and project_id:%(project_id)s", None),
    "project_member_api": ("role:member and project_id:%(project_id)s", None),
    "project_reader_api": ("role:reader and project_id:%(project_id)s", None),
    "service_api": ("role:service", None),
    "project_manager_or_admin": ("rule:project_manager_api or rule:context_is_admin", None),
    "project_member_or_admin": ("rule:project_member_api or rule:context_is_admin", None),
    "project_reader_or_admin": ("rule:project_reader_api or rule:context_is_admin", None),
    "service_or_admin": ("rule:service_api or rule:context_is_admin", None),
    "os_compute_api:servers:index": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:servers:detail": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:servers:index:get_all_tenants": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:detail:get_all_tenants": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:allow_all_filters": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:show": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:servers:show:host_status": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:show:flavor-extra-specs": (
        "rule:project_reader_or_admin",
        ["project"],
    ),
    "os_compute_api:os-extended-server-attributes": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:create": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:servers:delete": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:servers:resize": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:servers:confirm_resize": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:servers:revert_resize": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:servers:update": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:servers:stop": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:servers:start": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:os-admin-actions:reset_state": ("rule:context_is_admin", ["project"]),
    "os_compute_api:server-metadata:index": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:server-metadata:show": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:server-metadata:create": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:server-metadata:update_all": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:server-metadata:update": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:server-metadata:delete": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:os-flavor-manage:create": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-flavor-manage:delete": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-flavor-extra-specs:index": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-flavor-extra-specs:show": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-flavor-extra-specs:create": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-flavor-extra-specs:update": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-flavor-extra-specs:delete": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-migrations:index": ("rule:project_manager_or_admin", ["project"]),
    "os_compute_api:os-migrations:index:all_projects": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-migrations:index:host": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-instance-actions:list": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-instance-actions:show": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-instance-actions:events": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-instance-actions:events:details": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:migrations:index": ("rule:project_manager_or_admin", ["project"]),
    "os_compute_api:servers:migrations:index:host": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:migrations:show": ("rule:context_is_admin", ["project"]),
    "os_compute_api:servers:migrations:force_complete": (
        "rule:project_manager_or_admin",
        ["project"],
    ),
    "os_compute_api:servers:migrations:delete": ("rule:project_manager_or_admin", ["project"]),
    "os_compute_api:os-migrate-server:migrate": ("rule:project_manager_or_admin", ["project"]),
    "os_compute_api:os-migrate-server:migrate:host": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-migrate-server:migrate_live": (
        "rule:project_manager_or_admin",
        ["project"],
    ),
    "os_compute_api:os-migrate-server:migrate_live:host": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-evacuate": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-shelve:shelve": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:os-shelve:shelve_offload": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-shelve:unshelve": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:os-services:list": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-services:update": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hypervisors:list": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hypervisors:list-detail": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hypervisors:statistics": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hypervisors:show": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hypervisors:uptime": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hypervisors:search": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hypervisors:servers": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hosts:list": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hosts:show": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hosts:update": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hosts:reboot": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hosts:shutdown": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-hosts:start": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-simple-tenant-usage:show": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-simple-tenant-usage:list": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:index": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:create": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:show": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:update": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:delete": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:add_host": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:remove_host": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-aggregates:set_metadata": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-availability-zone:list": ("@", ["project"]),
    "os_compute_api:os-availability-zone:detail": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-quota-sets:show": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-quota-sets:update": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-quota-sets:defaults": ("@", ["project"]),
    "os_compute_api:os-quota-sets:detail": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-quota-sets:delete": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-quota-class-sets:show": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-quota-class-sets:update": ("rule:context_is_admin", ["project"]),
    "os_compute_api:limits": ("@", ["project"]),
    "os_compute_api:limits:other_project": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-keypairs:index": (
        "(rule:context_is_admin) or user_id:%(user_id)s",
        ["project"],
    ),
    "os_compute_api:os-keypairs:show": (
        "(rule:context_is_admin) or user_id:%(user_id)s",
        ["project"],
    ),
    "os_compute_api:os-keypairs:create": (
        "(rule:context_is_admin) or user_id:%(user_id)s",
        ["project"],
    ),
    "os_compute_api:os-keypairs:delete": (
        "(rule:context_is_admin) or user_id:%(user_id)s",
        ["project"],
    ),
    "os_compute_api:os-flavor-access": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-flavor-access:add_tenant_access": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-flavor-access:remove_tenant_access": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-server-groups:create": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:os-server-groups:delete": ("rule:project_member_or_admin", ["project"]),
    "os_compute_api:os-server-groups:index": ("rule:project_reader_or_admin", ["project"]),
    "os_compute_api:os-server-groups:index:all_projects": ("rule:context_is_admin", ["project"]),
    "os_compute_api:os-server-groups:show": ("rule:project_reader_or_admin", ["project"]),
}

#: Nova's rules on routes or fields served here that we do not have, and why.
NOT_HERE = {
    "os_compute_api:servers:show:host_status:unknown-only": (
        "host_status is shown whole or not at all (show:host_status)"
    ),
    "os_compute_api:servers:create:forced_host": "forcing a host at create is not served",
    "compute:servers:create:requested_destination": "a host at create (2.74) is not served",
    "os_compute_api:servers:create:zero_disk_flavor": "no check of zero-disk flavors at create",
    "os_compute_api:servers:create:attach_volume": "volumes are not served (400)",
    "os_compute_api:servers:create:attach_network": "the networks asked are not used",
    "compute:servers:resize:cross_cell": "no cells",
    "os_compute_api:os-shelve:unshelve_to_host": "unshelve to a host is 2.91, above 2.80",
    "os_compute_api:os-flavor-manage:update": "PUT /flavors/{flavor_id} (2.55) is not served",
    "os_compute_api:os-services:delete": "DELETE /os-services/{service_id} is not served",
}


def test_every_rule_has_nova_34s_default() -> None:
    ours = {rule.name: rule for rule in policies.list_rules()}
    assert set(ours) == set(NOVA_34)
    differ = {
        name: ((rule.check_str, rule.scope_types), NOVA_34[name])
        for name, rule in ours.items()
        if (rule.check_str, rule.scope_types) != NOVA_34[name]
    }
    assert differ == {}


def test_migrate_live_host_falls_back_on_migrate_live_as_in_nova() -> None:
    (rule,) = [r for r in live_migrate.RULES if r.name == live_migrate.MIGRATE_LIVE_HOST]
    assert isinstance(rule.deprecated_rule, oslo_policy.DeprecatedRule)
    assert (rule.deprecated_rule.name, rule.deprecated_rule.check_str) == (
        live_migrate.MIGRATE_LIVE,
        "rule:context_is_admin",
    )
    assert rule.deprecated_rule.deprecated_since == "32.0.0"


def test_the_reference_lists_every_rule_and_every_difference() -> None:
    text = REFERENCE.read_text()
    table, differences = text.split("Where the defaults differ from Nova's", 1)
    for rule in policies.list_rules():
        if isinstance(rule, oslo_policy.DocumentedRuleDefault):
            assert f"``{rule.name}``" in table, rule.name
    for name in NOT_HERE:
        assert f"``{name}``" in differences, name
