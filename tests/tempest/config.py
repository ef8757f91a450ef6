"""``tempest.conf`` from the template kept beside this module.

:func:`render` fills in the template's ``${name}`` placeholders;
:func:`from_environment` reads them for another deployment from the
``OS_*`` variables of an openrc file and ``TEMPEST_*`` ones (the table in
``doc/tempest.rst``).
"""

from __future__ import annotations

import pathlib
import string
from collections.abc import Mapping

from resize_sched.api import microversion

TEMPLATE = pathlib.Path(__file__).with_name("tempest.conf.template")

#: What every deployment gets unless told otherwise.
DEFAULTS = {
    "admin_domain_name": "Default",
    "region": "RegionOne",
    "insecure": "False",
    "min_microversion": str(microversion.MIN_VERSION),
    "max_microversion": str(microversion.MAX_VERSION),
    "build_timeout": "60",
    "min_compute_nodes": "2",
    "enable_instance_password": "True",
    "glance": "True",
}

#: Environment variable -> placeholder, for ``--cloud``.
ENVIRONMENT = {
    "OS_AUTH_URL": "auth_url",
    "OS_USERNAME": "admin_username",
    "OS_PASSWORD": "admin_password",
    "OS_PROJECT_NAME": "admin_project_name",
    "OS_USER_DOMAIN_NAME": "admin_domain_name",
    "OS_REGION_NAME": "region",
    "TEMPEST_IMAGE_REF": "image_ref",
    "TEMPEST_IMAGE_REF_ALT": "image_ref_alt",
    "TEMPEST_FLAVOR_REF": "flavor_ref",
    "TEMPEST_FLAVOR_REF_ALT": "flavor_ref_alt",
    "TEMPEST_MIN_MICROVERSION": "min_microversion",
    "TEMPEST_MAX_MICROVERSION": "max_microversion",
    "TEMPEST_BUILD_TIMEOUT": "build_timeout",
    "TEMPEST_MIN_COMPUTE_NODES": "min_compute_nodes",
    "TEMPEST_INSECURE": "insecure",
    "TEMPEST_GLANCE": "glance",
}


class ConfigError(ValueError):
    """A placeholder has no value."""


def placeholders(template: str | None = None) -> set[str]:
    """The names the template needs."""
    text = TEMPLATE.read_text() if template is None else template
    return {
        m.group("named") or m.group("braced")
        for m in string.Template.pattern.finditer(text)
        if m.group("named") or m.group("braced")
    }


def render(values: Mapping[str, str], template: str | None = None) -> str:
    """The template with every placeholder filled in from ``values`` over :data:`DEFAULTS`.

    :raises ConfigError: naming every placeholder without a value.
    """
    text = TEMPLATE.read_text() if template is None else template
    merged = {**DEFAULTS, **{k: v for k, v in values.items() if v != ""}}
    missing = sorted(placeholders(text) - set(merged))
    if missing:
        raise ConfigError(f"no value for {', '.join(missing)}")
    return string.Template(text).substitute(merged)


def from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The placeholders :data:`ENVIRONMENT` names, from ``environ``.

    The auth URL gets ``/v3`` when it has no version; ``OS_PROJECT_DOMAIN_NAME``
    stands in when ``OS_USER_DOMAIN_NAME`` is not set.
    """
    values = {key: environ[var] for var, key in ENVIRONMENT.items() if environ.get(var)}
    if "admin_domain_name" not in values and environ.get("OS_PROJECT_DOMAIN_NAME"):
        values["admin_domain_name"] = environ["OS_PROJECT_DOMAIN_NAME"]
    url = values.get("auth_url", "").rstrip("/")
    if url and not url.endswith("/v3"):
        url += "/v3"
    if url:
        values["auth_url"] = url
    return values
