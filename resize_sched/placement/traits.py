"""The traits that mark providers: our hosts and their children, disabled hosts, shared pools.

A shared Placement holds other services' providers, perhaps another
deployment's: everything that reads providers asks for the owner trait of
``[placement] deployment_name`` (see ``doc/architecture.rst``, "A shared
Placement").
"""

#: The owner trait of a deployment is this prefix and its upper-cased
#: ``[placement] deployment_name`` (see :func:`owner_trait`).
OWNER_TRAIT_PREFIX = "CUSTOM_RESIZE_SCHED_"
#: The standard trait on the root provider of a host that takes no new work
#: (os-traits; Nova sets it on the compute nodes of a disabled service).
DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"
#: The standard trait of a provider whose inventory the hosts of its
#: aggregates share (a storage pool's DISK_GB).
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
#: The standard trait Nova puts on the root provider of its compute nodes.
NOVA_COMPUTE_TRAIT = "COMPUTE_NODE"


def owner_trait(deployment_name: str) -> str:
    """The trait marking the resource providers of one deployment as its own.

    :param deployment_name: ``[placement] deployment_name`` (letters, digits, ``_``).
    :returns: ``CUSTOM_RESIZE_SCHED_<NAME>``, the name upper-cased.
    """
    return OWNER_TRAIT_PREFIX + deployment_name.upper()


#: The child trait of a deployment is this prefix and its upper-cased
#: ``[placement] deployment_name`` (see :func:`child_trait`).
CHILD_TRAIT_PREFIX = "CUSTOM_RSCHED_CHILD_"


def child_trait(owner: str) -> str:
    """The trait our compute services put on the child providers they create.

    Kept apart from the owner trait, which marks hosts (roots) only: a child
    with the owner trait would be listed, and scheduled to, as a host.

    :param owner: the deployment's owner trait (:func:`owner_trait`).
    :returns: ``CUSTOM_RSCHED_CHILD_<NAME>``.
    """
    return CHILD_TRAIT_PREFIX + owner[len(OWNER_TRAIT_PREFIX) :]
