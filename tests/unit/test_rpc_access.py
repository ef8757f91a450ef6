"""Only the RPC API's methods can be called over RPC.

The servers use oslo.messaging's ``ExplicitRPCAccessPolicy``: an endpoint
method is dispatchable only when marked ``@messaging.expose``. The exposed
set must be exactly what the matching client casts, so a public attribute
(the conductor's database, its Placement client) is never reachable.
"""

import inspect

import oslo_messaging as messaging
import pytest

from resize_sched import conf as rs_conf
from resize_sched import rpc
from resize_sched.compute.manager import ComputeManager
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor.manager import ConductorManager
from resize_sched.conductor.rpcapi import ConductorAPI


def _exposed(endpoint: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(endpoint)
        if callable(member) and getattr(member, "exposed", False)
    }


def _cast(client: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(client, inspect.isfunction)
        if not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("endpoint", "client"), [(ConductorManager, ConductorAPI), (ComputeManager, ComputeAPI)]
)
def test_exactly_the_rpc_api_is_exposed(endpoint, client):
    assert _exposed(endpoint) == _cast(client)


def test_the_policy_refuses_everything_else():
    policy = messaging.ExplicitRPCAccessPolicy()
    manager = ConductorManager.__new__(ConductorManager)
    manager.db = object()
    assert policy.is_allowed(manager, "resize_server")
    for name in ("db", "deps", "_prep", "__init__", "resizes"):
        assert not policy.is_allowed(manager, name)


def test_servers_use_the_explicit_policy():
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    transport = rpc.get_transport(conf, "fake://")
    server = rpc.get_server(transport, messaging.Target(topic="t", server="s"), [])
    assert isinstance(server.dispatcher.access_policy, messaging.ExplicitRPCAccessPolicy)
