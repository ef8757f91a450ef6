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

from oslo_config import cfg

from resize_sched.conf import ksa

GROUP_NAME = "glance"
DEFAULT_SERVICE_TYPE = "image"

GROUP = cfg.OptGroup(
    GROUP_NAME,
    title="Image service options",
    help="Connection to the Image service (Glance API v2) that server creates' "
    "imageRef is checked against. Unset auth_type: no check.",
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    ksa.register_opts(conf, GROUP, DEFAULT_SERVICE_TYPE, retries=2)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {GROUP: ksa.list_opts(DEFAULT_SERVICE_TYPE, retries=2)}
