"""Options of the ``[placement]`` group: how to reach the Placement API.

The group carries keystoneauth1's session, auth and adapter options, loaded the
way Nova loads them, so any keystoneauth auth plugin works. Against a standalone
Placement running ``[api] auth_strategy = noauth2`` use::

    [placement]
    auth_type = admin_token
    endpoint = http://127.0.0.1:8778
    token = admin

(keystoneauth's own ``noauth`` plugin sends the token ``notused``, which such a
Placement refuses with 403.)
"""

from oslo_config import cfg

from resize_sched.conf import ksa

GROUP_NAME = "placement"
DEFAULT_SERVICE_TYPE = "placement"

GROUP = cfg.OptGroup(
    GROUP_NAME,
    title="Placement service options",
    help="Connection to the Placement API, which holds every host's inventory "
    "and every server's and migration's allocations.",
)

#: ``[placement] deployment_name`` unless configured.
DEFAULT_DEPLOYMENT_NAME = "default"

OPTS = [
    cfg.StrOpt(
        "deployment_name",
        default=DEFAULT_DEPLOYMENT_NAME,
        regex=r"^[A-Za-z0-9_]+$",
        max_length=200,
        help="Names this deployment in a Placement shared with Nova, other services "
        "or other resize_sched deployments. Compute services mark the resource "
        "providers they register with the trait CUSTOM_RESIZE_SCHED_<NAME> (the name "
        "upper-cased), and the scheduler, 'resize-sched-manage placement audit' and "
        "'placement heal' see only providers with that trait: hosts registered by "
        "anything else are never chosen, audited or healed. Every service of one "
        "deployment must use the same value; deployments sharing one Placement must "
        "use different ones (names differing only in case are the same). Letters, "
        "digits and underscores. Changing it hides every existing host: a compute "
        "service refuses a provider marked for another deployment.",
    ),
    cfg.IntOpt(
        "generation_conflict_retries",
        default=3,
        min=0,
        help="How many times one allocation write (a resize's transition, a "
        "build's claim) is re-read and re-sent after Placement answers 409 "
        "placement.concurrent_update: someone else wrote the same consumer, or a "
        "concurrent claim changed the provider, in between. With Placement's own "
        "allocation_conflict_retry_count = 1 (recommended: see "
        "doc/placement-overcommit.rst) these retries are what absorbs contention. "
        "Capacity refusals are never retried.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    ksa.register_opts(conf, GROUP, DEFAULT_SERVICE_TYPE, retries=3)
    conf.register_opts(OPTS, group=GROUP.name)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {GROUP: OPTS + ksa.list_opts(DEFAULT_SERVICE_TYPE, retries=3)}
