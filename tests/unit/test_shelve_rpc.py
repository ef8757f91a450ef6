"""The shelving casts are versioned: conductor RPC 1.6, compute RPC 1.3, and
refused by a client capped lower (``[upgrade_levels]``), before anything is sent."""

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from resize_sched import conf as rs_conf
from resize_sched import rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor.rpcapi import ConductorAPI
from resize_sched.context import admin_context


def _conf(**caps: str) -> cfg.ConfigOpts:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    for service, cap in caps.items():
        conf.set_override(service, cap, group="upgrade_levels")
    return conf


def test_uncapped_clients_take_the_shelving_casts() -> None:
    conf = _conf()
    transport = rpc.get_transport(conf, "fake://")
    assert ConductorAPI(conf, transport).can_shelve
    assert ComputeAPI(conf, transport).can_shelve


@pytest.mark.parametrize("method", ["shelve_server", "shelve_offload_server", "unshelve_server"])
def test_a_conductor_capped_at_1_5_is_sent_no_shelving(method: str) -> None:
    conf = _conf(conductor="1.5")
    conductor = ConductorAPI(conf, rpc.get_transport(conf, "fake://"))
    assert not conductor.can_shelve
    with pytest.raises(messaging.RPCVersionCapError):
        getattr(conductor, method)(admin_context(), "0f7b8c2e-3b7a-4d0e-9a43-2a7f4c7a9b10")
    assert conductor.can_live_migrate


@pytest.mark.parametrize(
    "method", ["shelve_instance", "shelve_offload_instance", "unshelve_instance"]
)
def test_a_host_capped_at_1_2_is_sent_no_shelving(method: str) -> None:
    conf = _conf(compute="1.2")
    compute = ComputeAPI(conf, rpc.get_transport(conf, "fake://"))
    assert not compute.can_shelve
    with pytest.raises(messaging.RPCVersionCapError):
        getattr(compute, method)(admin_context(), "h1", {"uuid": "x"})
    assert compute.can_power
