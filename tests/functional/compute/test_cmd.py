"""``resize-sched-compute`` as an operator runs it: --help, bad config, signals."""

import pathlib
import signal
import subprocess
import sys
import time
import uuid

import kombu
import oslo_messaging as messaging
import pytest
from oslo_messaging import opts as messaging_opts

from resize_sched import rpc
from resize_sched.cmd import compute as compute_cmd
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.context import RequestContext
from resize_sched.placement.embedded import PlacementHTTP
from tests.functional.compute.conftest import (
    RecordingConductor,
    parsed_conf,
    serve_conductor,
    wait_until,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _run_compute(config: pathlib.Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "resize_sched.cmd.compute", "--config-file", str(config)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # oslo.log writes to stdout unless use_stderr
        text=True,
    )


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert compute_cmd.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--config-file" in out
    assert "registers itself in Placement" in out


def test_bad_fail_on_stops_the_start_with_a_clear_error(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "compute.conf"
    config.write_text(
        "[DEFAULT]\nhost = c1\ntransport_url = fake://\n[fake_driver]\nfail_on = c1:reboot\n"
    )
    proc = _run_compute(config)
    err, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "resize-sched-compute: error:" in err
    assert "unknown operation 'reboot'" in err and str(config) in err


def test_unreachable_placement_fails_the_start(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "compute.conf"
    config.write_text(
        "[DEFAULT]\nhost = c1\ntransport_url = fake://\n"
        "[placement]\nauth_type = admin_token\nendpoint = http://127.0.0.1:9/placement\n"
        "token = admin\nconnect_retries = 0\n"
    )
    proc = _run_compute(config)
    err, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "could not start" in err and "Placement is unavailable" in err


@pytest.mark.rabbit
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_daemon_serves_over_rabbit_and_stops_on_signal(
    rabbit_url: str,
    placement_http: PlacementHTTP,
    tmp_path: pathlib.Path,
    signum: signal.Signals,
) -> None:
    host = f"compute-{uuid.uuid4().hex[:8]}"
    # A control exchange of its own: nothing else on the broker sees our messages.
    exchange = f"rs-test-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "compute.conf"
    config.write_text(
        f"[DEFAULT]\nhost = {host}\ntransport_url = {rabbit_url}\ncontrol_exchange = {exchange}\n"
        f"[placement]\nauth_type = admin_token\nendpoint = {placement_http.endpoint}\n"
        "token = admin\n"
        "[compute]\nvcpus = 2\nmemory_mb = 4096\ndisk_gb = 40\n"
    )
    client = placement_http.client()
    proc = _run_compute(config)
    conf = parsed_conf()
    conf.register_opts(dict(messaging_opts.list_opts())[None])
    conf.set_override("control_exchange", exchange)
    transport = rpc.get_transport(conf, url=rabbit_url)
    conductor = RecordingConductor()
    server: messaging.MessageHandlingServer | None = None
    try:
        wait_until(lambda: bool(client.list_resource_providers(name=host)), timeout=60)
        provider = client.list_resource_providers(name=host)[0]
        wait_until(lambda: bool(client.get_inventories(provider["uuid"])[0]), timeout=30)
        assert client.get_inventories(provider["uuid"])[0]["VCPU"]["total"] == 2

        server = serve_conductor(transport, conductor)
        server_uuid = str(uuid.uuid4())
        flavor = {"id": "f", "vcpus": 1, "memory_mb": 512, "root_gb": 1}
        api = ComputeAPI(conf, transport)
        server_msg = {"uuid": server_uuid, "name": "vm", "flavor": flavor}

        # NOTE: the host registers in Placement before it serves RPC, and a
        # cast that reaches RabbitMQ before the host's queue exists is dropped;
        # re-sending spawn is harmless, so send until it is answered.
        def answered() -> bool:
            api.spawn(RequestContext(), host, server_msg)
            time.sleep(0.5)
            return any(r.kwargs.get("server_uuid") == server_uuid for r in conductor.reports)

        wait_until(answered, timeout=30)
        conductor.wait_for("build_done", server_uuid=server_uuid)

        proc.send_signal(signum)
        err, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert f"{signum.name} received; stopping compute host {host}" in err
        assert f"Compute host {host} stopped" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if server is not None:
            server.stop()
            server.wait()
        transport.cleanup()
        _delete_from_broker(
            rabbit_url, queues=[f"compute.{host}", "conductor.test-conductor"], exchange=exchange
        )


def _delete_from_broker(url: str, queues: list[str], exchange: str) -> None:
    """Remove what the test declared under its own names (oslo.messaging keeps them)."""
    with kombu.Connection(url.replace("rabbit://", "amqp://", 1)) as connection:
        channel = connection.channel()
        for queue in queues:
            channel.queue_delete(queue)
        channel.exchange_delete(exchange)
