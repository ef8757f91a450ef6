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

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

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
        "allocation_conflict_retry_count = 1 (recommended, see the README) these "
        "retries are what absorbs contention. Capacity refusals are never retried.",
    ),
]

# keystoneauth's adapter retries are what make "Placement is down" a bounded
# wait; the library defaults (no retries) are too brittle for a conductor.
_ADAPTER_DEFAULTS = {
    "service_type": DEFAULT_SERVICE_TYPE,
    "valid_interfaces": ["internal", "public"],
    "connect_retries": 3,
    "connect_retry_delay": 0.5,
    "status_code_retries": 3,
    "status_code_retry_delay": 0.5,
    "retriable_status_codes": [502, 503, 504],
}


def _adapter_opts() -> list[cfg.Opt]:
    opts = []
    for opt in ks_loading.get_adapter_conf_options(include_deprecated=False):
        if opt.dest in _ADAPTER_DEFAULTS:
            opt = copy.deepcopy(opt)
            opt.default = _ADAPTER_DEFAULTS[opt.dest]
        opts.append(opt)
    return opts


def register_opts(conf: cfg.ConfigOpts) -> None:
    # NOTE: a copy per ConfigOpts: oslo.config keeps overrides in the group
    # object, so a shared module-level group would leak them between configs.
    conf.register_group(copy.deepcopy(GROUP))
    conf.register_opts(OPTS, group=GROUP.name)
    ks_loading.register_session_conf_options(conf, GROUP_NAME)
    ks_loading.register_auth_conf_options(conf, GROUP_NAME)
    conf.register_opts(_adapter_opts(), group=GROUP.name)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {
        GROUP: (
            OPTS
            + ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options("admin_token")
            + ks_loading.get_auth_plugin_conf_options("password")
            + _adapter_opts()
        )
    }
