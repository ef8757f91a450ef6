"""Options of the ``[glance]`` group: how to reach the Image service.

When the group names an auth plugin (``auth_type``), the API checks every
server create's ``imageRef`` against the Image API v2 (``GET
/v2/images/{id}``): an unknown or inactive image, or one whose ``min_ram``,
``min_disk`` or size the flavor does not meet, is a 400, as in Nova. Left
unconfigured, ``imageRef`` is stored as given and never checked.

The group carries keystoneauth1's session, auth and adapter options, loaded
as ``[placement]`` loads them; with ``auth_type = password`` the endpoint is
found in the Keystone catalog (``service_type``, ``valid_interfaces``,
``region_name``), or given with ``endpoint_override``. The credentials are
the API service's own: they must see every image the API's callers may boot
(an admin sees every image).
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP_NAME = "glance"
DEFAULT_SERVICE_TYPE = "image"

GROUP = cfg.OptGroup(
    GROUP_NAME,
    title="Image service options",
    help="Connection to the Image service (Glance API v2) that server creates' "
    "imageRef is checked against. Unset auth_type: no check.",
)

_ADAPTER_DEFAULTS = {
    "service_type": DEFAULT_SERVICE_TYPE,
    "valid_interfaces": ["internal", "public"],
    "connect_retries": 2,
    "connect_retry_delay": 0.5,
    "status_code_retries": 2,
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
    # NOTE: a copy per ConfigOpts, as for [placement].
    conf.register_group(copy.deepcopy(GROUP))
    ks_loading.register_session_conf_options(conf, GROUP_NAME)
    ks_loading.register_auth_conf_options(conf, GROUP_NAME)
    conf.register_opts(_adapter_opts(), group=GROUP_NAME)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {
        GROUP: (
            ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options("admin_token")
            + ks_loading.get_auth_plugin_conf_options("password")
            + _adapter_opts()
        )
    }
