"""``[oslo_messaging_rabbit]`` read as the driver reads it: which RPC queues a
configuration makes, and the warning a daemon logs at start.

No broker: a rabbit transport connects only when first used, so building one
here checks that our transport sees the file's options.
"""

import logging
import pathlib

import pytest

from resize_sched import conf as rs_conf
from resize_sched import rpc


def _conf(tmp_path: pathlib.Path, text: str) -> object:
    path = tmp_path / "rs.conf"
    path.write_text(text)
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(path)])
    return conf


RABBIT = "[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:5672/\n"


@pytest.mark.parametrize(
    ("text", "kind", "durable"),
    [
        (RABBIT, "classic non-durable", False),
        (RABBIT + "[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n", "quorum", True),
        (
            RABBIT + "[oslo_messaging_rabbit]\namqp_durable_queues = true\n",
            "classic durable",
            True,
        ),
        (
            "[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:5672/?rabbit_quorum_queue=true\n",
            "quorum",
            True,
        ),
        ("[DEFAULT]\ntransport_url = fake://\n", "not RabbitMQ", True),
    ],
    ids=["defaults", "quorum", "durable-classic", "quorum-in-url", "fake"],
)
def test_queue_durability(tmp_path, text, kind, durable):
    found = rpc.queue_durability(_conf(tmp_path, text))
    assert (found.kind, found.durable, found.error) == (kind, durable, None)
    assert (found.problem is None) == durable
    if found.problem:
        assert "rabbit_quorum_queue = true" in found.problem


def test_quorum_with_ha_queues_is_an_error(tmp_path):
    found = rpc.queue_durability(
        _conf(
            tmp_path,
            RABBIT + "[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n"
            "rabbit_ha_queues = true\n",
        )
    )
    assert found.kind == "quorum"
    assert "rabbit_ha_queues" in found.error


@pytest.mark.parametrize(("quorum", "warned"), [(False, True), (True, False)])
def test_transport_passes_the_options_through_and_warns(tmp_path, caplog, quorum, warned):
    text = RABBIT + f"[oslo_messaging_rabbit]\nrabbit_quorum_queue = {str(quorum).lower()}\n"
    conf = _conf(tmp_path, text)
    with caplog.at_level(logging.WARNING, logger="resize_sched.rpc"):
        transport = rpc.get_transport(conf)
    try:
        # The driver's own view of the option: it declares quorum queues.
        connection_conf = transport._driver._connection_pool.conf  # noqa: SLF001
        assert connection_conf.oslo_messaging_rabbit.rabbit_quorum_queue is quorum
    finally:
        transport.cleanup()
    assert any("non-durable" in r.getMessage() for r in caplog.records) is warned
