"""keystoneauth1's session, auth and adapter options on a service's group.

``[placement]`` and ``[glance]`` both carry them, loaded the way Nova loads
them, so any keystoneauth auth plugin works.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg


def _adapter_opts(service_type: str, retries: int) -> list[cfg.Opt]:
    # keystoneauth's adapter retries are what make "the service is down" a
    # bounded wait; the library defaults (no retries) are too brittle for us.
    defaults = {
        "service_type": service_type,
        "valid_interfaces": ["internal", "public"],
        "connect_retries": retries,
        "connect_retry_delay": 0.5,
        "status_code_retries": retries,
        "status_code_retry_delay": 0.5,
        "retriable_status_codes": [502, 503, 504],
    }
    opts = []
    for opt in ks_loading.get_adapter_conf_options(include_deprecated=False):
        if opt.dest in defaults:
            opt = copy.deepcopy(opt)
            opt.default = defaults[opt.dest]
        opts.append(opt)
    return opts


def register_opts(
    conf: cfg.ConfigOpts, group: cfg.OptGroup, service_type: str, retries: int
) -> None:
    """Register ``group`` on ``conf`` with keystoneauth's options in it."""
    # NOTE: a copy per ConfigOpts: oslo.config keeps overrides in the group
    # object, so a shared module-level group would leak them between configs.
    conf.register_group(copy.deepcopy(group))
    ks_loading.register_session_conf_options(conf, group.name)
    ks_loading.register_auth_conf_options(conf, group.name)
    conf.register_opts(_adapter_opts(service_type, retries), group=group.name)


def list_opts(service_type: str, retries: int) -> list[cfg.Opt]:
    """keystoneauth's options as the sample config documents them."""
    return (
        ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options("admin_token")
        + ks_loading.get_auth_plugin_conf_options("password")
        + _adapter_opts(service_type, retries)
    )
