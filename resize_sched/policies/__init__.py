"""The policy rules the Compute API enforces, with their defaults.

Names and defaults are Nova's for the routes served here, so a ``policy.yaml``
written for Nova's Compute API means the same thing here. Each module lists
the rules of one resource in ``RULES``; :func:`list_rules` gathers them for the enforcer
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

#: The modules in the order the sample policy file lists their rules.
_MODULES = (
    base,
    servers,
    server_metadata,
    flavors,
    migrations,
    instance_actions,
    server_migrations,
    migrate_server,
    live_migrate,
    evacuate,
    shelve,
    services,
    hypervisors,
    hosts,
    simple_tenant_usage,
    aggregates,
    quotas,
    server_groups,
)


def list_rules() -> list[policy.RuleDefault]:
    """Every rule default, the base rules first.

    :returns: the rules, in the order the sample policy file lists them.
    """
    return list(itertools.chain.from_iterable(module.RULES for module in _MODULES))
