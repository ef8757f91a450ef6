"""``[placement]`` credentials load the keystoneauth plugin they name.

The configuration is read from a file, as an operator writes it, and goes
through :meth:`PlacementClient.from_conf` (keystoneauth's loading from a
ConfigOpts). No Keystone is contacted: the plugin's type and identifying
parameters, and the session and adapter built around it, are checked.
"""

from pathlib import Path

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import generic, v3

from resize_sched import conf as rs_conf
from resize_sched.placement.client import PlacementClient

KEYSTONE = "http://keystone.test:5000/v3"


def _adapter(tmp_path: Path, placement_section: str) -> ks_adapter.Adapter:
    config = tmp_path / "resize_sched.conf"
    config.write_text(f"[placement]\n{placement_section}")
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)])
    adapter = PlacementClient.from_conf(conf)._adapter
    assert isinstance(adapter, ks_adapter.Adapter)
    assert isinstance(adapter.session, ks_session.Session)
    assert adapter.auth is adapter.session.auth
    assert adapter.service_type == "placement"
    return adapter


def test_password(tmp_path: Path) -> None:
    adapter = _adapter(
        tmp_path,
        f"auth_type = password\n"
        f"auth_url = {KEYSTONE}\n"
        "username = resize_sched\n"
        "password = secret\n"
        "user_domain_name = Default\n"
        "project_name = service\n"
        "project_domain_name = Default\n"
        "region_name = RegionTwo\n"
        "valid_interfaces = internal\n"
        "cafile = /etc/ssl/certs/keystone-ca.pem\n"
        "timeout = 30\n",
    )
    assert type(adapter.auth) is generic.Password
    elements = adapter.auth.get_cache_id_elements()
    assert {k: v for k, v in elements.items() if v is not None} == {
        "auth_url": KEYSTONE,
        "username": "resize_sched",
        "password": "secret",
        "user_domain_name": "Default",
        "project_name": "service",
        "project_domain_name": "Default",
    }
    assert adapter.region_name == "RegionTwo"
    assert adapter.interface == ["internal"]
    assert adapter.session.verify == "/etc/ssl/certs/keystone-ca.pem"
    assert adapter.session.timeout == 30.0
    # Our adapter defaults when the operator sets none.
    assert (adapter.connect_retries, adapter.status_code_retries) == (3, 3)


def test_application_credential(tmp_path: Path) -> None:
    adapter = _adapter(
        tmp_path,
        f"auth_type = v3applicationcredential\n"
        f"auth_url = {KEYSTONE}\n"
        "application_credential_id = 6cb5fa6a13184e6fab65ba2108adf50c\n"
        "application_credential_secret = glance-does-not-know-this\n",
    )
    assert type(adapter.auth) is v3.ApplicationCredential
    assert adapter.auth.auth_url == KEYSTONE
    (method,) = adapter.auth.auth_methods
    assert isinstance(method, v3.ApplicationCredentialMethod)
    assert method.application_credential_id == "6cb5fa6a13184e6fab65ba2108adf50c"
    assert method.application_credential_secret == "glance-does-not-know-this"
    # An application credential carries its own project: none is configured.
    elements = adapter.auth.get_cache_id_elements()
    assert elements["project_name"] is None and elements["project_id"] is None
    assert adapter.interface == ["internal", "public"]


def test_application_credential_by_name(tmp_path: Path) -> None:
    adapter = _adapter(
        tmp_path,
        f"auth_type = v3applicationcredential\n"
        f"auth_url = {KEYSTONE}\n"
        "application_credential_name = resize-sched\n"
        "application_credential_secret = s3cret\n"
        "username = resize_sched\n"
        "user_domain_name = Default\n",
    )
    (method,) = adapter.auth.auth_methods
    assert (method.application_credential_name, method.username) == (
        "resize-sched",
        "resize_sched",
    )
    assert method.user_domain_name == "Default"
