"""``[quota] driver = unified_limits``: resize_sched.quota reading Keystone's
limits through oslo.limit's real Enforcer.

Keystone is oslo.limit's own stand-in (:class:`oslo_limit.fixture.LimitFixture`:
a flat enforcement model, the registered and project limits given); usage
comes from a database stand-in that counts like ``quota_usage``.
"""

from collections.abc import Iterator
from typing import Any

import pytest
from oslo_config import cfg
from oslo_limit import exception as limit_exceptions
from oslo_limit import fixture as limit_fixture
from oslo_limit import limit

from resize_sched import conf as rs_conf
from resize_sched import exception, quota
from resize_sched.conf import quota as quota_conf
from resize_sched.quota import unified_limits

PROJECT = "0f2a6c1e0d6b4d5c9b7e8f9a0b1c2d3e"
OTHER = "9e8d7c6b5a4f4e3d2c1b0a9f8e7d6c5b"

#: Registered limits: every Nova name but server_injected_file_path_bytes.
REGISTERED = {
    "servers": 4,
    "class:VCPU": 8,
    "class:MEMORY_MB": 4096,
    "server_metadata_items": 3,
    "server_key_pairs": 2,
    "server_groups": 5,
    "server_group_members": 6,
    "server_injected_files": 1,
    "server_injected_file_content_bytes": 100,
}
PROJECT_LIMITS = {PROJECT: {"class:VCPU": 3, "servers": -1, "server_groups": 1}}


class FakeDb:
    """What check_server reads: ``quota_usage`` as the database counts it."""

    def __init__(self, usage: dict[str, int]) -> None:
        self.usage = usage
        self.asked: list[tuple[str, str | None]] = []

    def quota_usage(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        self.asked.append((project_id, user_id))
        return dict(self.usage)


@pytest.fixture
def conf() -> cfg.ConfigOpts:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    conf.set_override("driver", "unified_limits", group="quota")
    quota_conf.register_oslo_limit_opts(conf)
    conf.set_override("endpoint_id", "endpoint-of-resize-sched", group="oslo_limit")
    return conf


@pytest.fixture
def keystone() -> Iterator[limit_fixture.LimitFixture]:
    fixture = limit_fixture.LimitFixture(REGISTERED, PROJECT_LIMITS)
    fixture.setUp()
    try:
        yield fixture
    finally:
        fixture.cleanUp()


def test_limits_take_the_project_limit_for_servers_cpu_and_ram_only(
    conf: cfg.ConfigOpts, keystone: Any
) -> None:
    found = quota.limits(None, conf, PROJECT, "someone")
    assert {name: found[name] for name in quota.RESOURCES} == {
        "instances": -1,
        "cores": 3,
        "ram": 4096,
        "metadata_items": 3,
        "key_pairs": 2,
        # NOTE: as Nova: a project limit on a local resource is not read.
        "server_groups": 5,
        "server_group_members": 6,
    }
    assert (found["injected_files"], found["injected_file_content_bytes"]) == (1, 100)
    # Registered nowhere: 0, as oslo.limit and Nova take it (nothing allowed).
    assert found["injected_file_path_bytes"] == 0
    # Keystone has no name for nova-network's: unlimited, as Nova shows them.
    assert {found[name] for name in quota.NETWORK} == {-1}
    other = quota.limits(None, conf, OTHER)
    assert (other["instances"], other["cores"], other["ram"]) == (4, 8, 4096)


def test_defaults_and_every_class_are_the_registered_limits(
    conf: cfg.ConfigOpts, keystone: Any
) -> None:
    found = quota.defaults(None, conf)
    assert (found["instances"], found["cores"], found["ram"], found["server_groups"]) == (
        4,
        8,
        4096,
        5,
    )
    assert quota.class_limits(None, conf, "gold") == found
    assert quota.settable(conf) is False


def test_check_server_counts_from_the_database_and_names_the_first_resource(
    conf: cfg.ConfigOpts, keystone: Any
) -> None:
    db = FakeDb({"instances": 2, "cores": 2, "ram": 1024})
    quota.check_server(db, conf, PROJECT, "alice", {"instances": 1, "cores": 1, "ram": 512})
    # One count, for the project: unified limits have no per-user limits.
    assert db.asked == [(PROJECT, None)]
    with pytest.raises(exception.OverQuota) as refused:
        quota.check_server(db, conf, PROJECT, "alice", {"instances": 1, "cores": 2, "ram": 4000})
    # Both cores and ram are over; cores comes first, as with the db driver.
    assert refused.value.kwargs == {"resource": "cores", "requested": 2, "used": 2, "limit": 3}


def test_the_recheck_takes_the_request_out_of_the_count(
    conf: cfg.ConfigOpts, keystone: Any
) -> None:
    # The row is written: 3 cores counted, 1 of them the request's own.
    db = FakeDb({"instances": 3, "cores": 3, "ram": 1536})
    deltas = {"instances": 1, "cores": 1, "ram": 512}
    quota.check_server(db, conf, PROJECT, "alice", deltas, already_added=True)
    db.usage["cores"] = 4
    with pytest.raises(exception.OverQuota) as refused:
        quota.check_server(db, conf, PROJECT, "alice", deltas, already_added=True)
    assert refused.value.kwargs == {"resource": "cores", "requested": 1, "used": 3, "limit": 3}


def test_a_resize_down_is_never_refused_and_asks_keystone_nothing(
    conf: cfg.ConfigOpts, keystone: Any
) -> None:
    db = FakeDb({"instances": 9, "cores": 90, "ram": 90000})
    quota.check_server(db, conf, PROJECT, "alice", {"cores": -2, "ram": 0})
    keystone.mock_conn.limits.assert_not_called()
    keystone.mock_conn.registered_limits.assert_not_called()


def test_local_limits_are_the_registered_ones(conf: cfg.ConfigOpts, keystone: Any) -> None:
    # The project's own server_groups limit (1) is not read, as in Nova.
    quota.enforce(None, conf, PROJECT, "alice", {"server_groups": 1}, {"server_groups": 4})
    with pytest.raises(exception.OverQuota) as refused:
        quota.enforce(None, conf, PROJECT, "alice", {"server_groups": 1}, {"server_groups": 5})
    assert refused.value.kwargs == {
        "resource": "server_groups",
        "requested": 1,
        "used": 5,
        "limit": 5,
    }


def test_a_resource_keystone_has_no_limit_for_is_refused(
    conf: cfg.ConfigOpts, keystone: Any
) -> None:
    with pytest.raises(exception.OverQuota) as refused:
        quota.enforce(None, conf, PROJECT, None, {"injected_file_path_bytes": 1}, {})
    assert refused.value.kwargs["limit"] == 0


def test_noop_and_db_drivers_never_ask_keystone(conf: cfg.ConfigOpts, keystone: Any) -> None:
    conf.set_override("driver", "noop", group="quota")
    quota.enforce(None, conf, PROJECT, None, {"injected_file_path_bytes": 1}, {})
    conf.set_override("driver", "db", group="quota")
    assert quota.settable(conf) is True
    keystone.mock_conn.limits.assert_not_called()
    keystone.mock_conn.registered_limits.assert_not_called()


def test_keystone_unreachable_is_limits_unavailable(
    conf: cfg.ConfigOpts, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise limit_exceptions.SessionInitError("connection refused")

    monkeypatch.setattr(limit, "_get_keystone_connection", refuse)
    with pytest.raises(exception.LimitsUnavailable) as failed:
        quota.limits(None, conf, PROJECT)
    assert "connection refused" in failed.value.message


def test_our_oslo_limit_options_reach_oslo_limit(conf: cfg.ConfigOpts) -> None:
    conf.set_override("endpoint_id", "the-endpoint", group="oslo_limit")
    conf.set_override("auth_type", "password", group="oslo_limit")
    quota_conf.register_oslo_limit_opts(conf)
    conf.set_override("auth_url", "http://keystone.test/v3", group="oslo_limit")
    unified_limits._configure(conf)
    assert limit.CONF.oslo_limit.endpoint_id == "the-endpoint"
    assert limit.CONF.oslo_limit.auth_type == "password"
    assert limit.CONF.oslo_limit.auth_url == "http://keystone.test/v3"
