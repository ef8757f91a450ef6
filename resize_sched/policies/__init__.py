"""The policy rules the Compute API enforces, with their defaults.

Names and defaults are Nova's for the routes served here, so a ``policy.yaml``
written for Nova's Compute API means the same thing here. Each module lists
the rules of one resource; :func:`list_rules` gathers them for the enforcer
and for ``oslopolicy-sample-generator`` (the ``oslo.policy.policies`` entry
point ``resize_sched``).
"""

import itertools

from oslo_policy import policy

from resize_sched.policies import (
    aggregates,
    base,
    evacuate,
    flavors,
    hosts,
    hypervisors,
    instance_actions,
    live_migrate,
    migrate_server,
    migrations,
    quotas,
    server_groups,
    server_metadata,
    server_migrations,
    servers,
    services,
    shelve,
    simple_tenant_usage,
)


def list_rules() -> list[policy.RuleDefault]:
    """Every rule default, the base rules first.

    :returns: the rules, in the order the sample policy file lists them.
    """
    return list(
        itertools.chain(
            base.list_rules(),
            servers.list_rules(),
            server_metadata.list_rules(),
            flavors.list_rules(),
            migrations.list_rules(),
            instance_actions.list_rules(),
            server_migrations.list_rules(),
            migrate_server.list_rules(),
            live_migrate.list_rules(),
            evacuate.list_rules(),
            shelve.list_rules(),
            services.list_rules(),
            hypervisors.list_rules(),
            hosts.list_rules(),
            simple_tenant_usage.list_rules(),
            aggregates.list_rules(),
            quotas.list_rules(),
            server_groups.list_rules(),
        )
    )
