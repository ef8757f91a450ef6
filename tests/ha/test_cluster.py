"""The HA clusters themselves: started once, then each fault for real.

Runs only with ``RESIZE_SCHED_TEST_HA=1`` (``tox -e ha``): it starts a
three-node RabbitMQ cluster and a three-node Galera cluster of its own (about
a minute on two cores) and needs rabbitmq-server, MariaDB with the Galera 4
provider and rsync (bindep's ``test`` profile).
"""

from __future__ import annotations

import os
import pathlib
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.ha

if os.environ.get("RESIZE_SCHED_TEST_HA") != "1":
    pytest.skip(
        "starts RabbitMQ and Galera clusters of its own: set RESIZE_SCHED_TEST_HA=1 (tox -e ha)",
        allow_module_level=True,
    )

from tests.ha.cluster import (  # noqa: E402
    FailoverProxy,
    GaleraCluster,
    GaleraNode,
    RabbitCluster,
    clusters,
)

VHOST = "ha/test"


@pytest.fixture(scope="module")
def both(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RabbitCluster, GaleraCluster]]:
    started = time.monotonic()
    with clusters(tmp_path_factory.mktemp("ha")) as (rabbit, galera):
        print(
            f"both clusters started in {time.monotonic() - started:.1f}s "
            f"(RabbitMQ {rabbit.started_in:.1f}s, Galera {galera.started_in:.1f}s, side by side)"
        )
        rabbit.add_vhost(VHOST)
        yield rabbit, galera


@pytest.fixture
def rabbit(both: tuple[RabbitCluster, GaleraCluster]) -> RabbitCluster:
    return both[0]


@pytest.fixture
def galera(both: tuple[RabbitCluster, GaleraCluster]) -> GaleraCluster:
    return both[1]


def _wait(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    """``check()``'s first true answer (exceptions count as false)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"{what}: not after {timeout}s (last: {last!r})")


# -- RabbitMQ ----------------------------------------------------------------


def _kombu_urls(rabbit: RabbitCluster, first: int | None = None) -> list[str]:
    """The cluster's oslo.messaging URL, parsed by oslo.messaging, as the
    ``amqp://`` list kombu fails over along (node ``first`` first)."""
    import urllib.parse

    import oslo_messaging
    from oslo_config import cfg

    url = oslo_messaging.TransportURL.parse(cfg.ConfigOpts(), rabbit.transport_url(VHOST))
    assert url.transport == "rabbit"
    assert [h.port for h in url.hosts] == [n.amqp_port for n in rabbit.nodes]
    vhost = urllib.parse.quote(url.virtual_host, safe="")
    urls = [f"amqp://{h.username}:{h.password}@{h.hostname}:{h.port}/{vhost}" for h in url.hosts]
    if first is not None:
        urls.insert(0, urls.pop(first - 1))
    return urls


def _connection(urls: list[str]) -> Any:
    import kombu

    conn = kombu.Connection(
        urls, failover_strategy="round-robin", transport_options={"confirm_publish": True}
    )
    conn.ensure_connection(max_retries=2 * len(urls), interval_start=0.2, interval_step=0.5)
    return conn


def _quorum_queue(name: str) -> Any:
    import kombu

    return kombu.Queue(
        name,
        exchange=kombu.Exchange("", type="direct"),
        routing_key=name,
        durable=True,
        queue_arguments={"x-queue-type": "quorum"},
    )


def _publish(urls: list[str], queue: Any, *bodies: str) -> None:
    """Publish ``bodies`` persistently, each confirmed by the broker."""
    with _connection(urls) as conn:
        producer = conn.Producer()
        for body in bodies:
            producer.publish(
                body, exchange="", routing_key=queue.name, declare=[queue], delivery_mode=2
            )


def _consume(urls: list[str], queue: Any, count: int, timeout: float = 60.0) -> list[str]:
    """``count`` message bodies got (and acked) from ``queue``."""
    got: list[str] = []

    def _get() -> bool:
        with _connection(urls) as conn:
            bound = queue(conn.channel())
            bound.declare()
            while len(got) < count:
                message = bound.get(no_ack=False)
                if message is None:
                    return False
                got.append(message.payload)
                message.ack()
        return True

    _wait(f"{count} messages from {queue.name}", _get, timeout)
    return got


def _refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def test_rabbit_cluster_is_formed(rabbit: RabbitCluster) -> None:
    status = rabbit.cluster_status()
    assert sorted(status["running_nodes"]) == sorted(n.name for n in rabbit.nodes)
    assert rabbit.running() == rabbit.nodes
    assert all(n.pid for n in rabbit.nodes)
    assert rabbit.transport_url(VHOST).endswith("/ha%2Ftest")


def test_quorum_queue_survives_leader_sigkill(rabbit: RabbitCluster) -> None:
    queue = _quorum_queue(f"qq-kill-{uuid.uuid4().hex[:8]}")
    _publish(_kombu_urls(rabbit), queue, "before the kill")
    (row,) = [q for q in rabbit.queues(VHOST) if q["name"] == queue.name]
    assert row["type"] == "quorum"
    assert len(row["members"]) == 3
    leader = rabbit.queue_leader(queue.name, VHOST)
    assert leader is not None

    rabbit.kill(leader)
    assert leader.pid is None and leader not in rabbit.running()
    new_leader = _wait(
        "a new leader", lambda: (n := rabbit.queue_leader(queue.name, VHOST)) and n != leader and n
    )
    assert new_leader in rabbit.running()
    # The dead node first in the list: kombu must fail over past it.
    assert _consume(_kombu_urls(rabbit, first=leader.index), queue, 1) == ["before the kill"]

    rabbit.start_node(leader)
    assert rabbit.running() == rabbit.nodes
    assert leader.name in rabbit.cluster_status(leader)["running_nodes"]


def test_stop_app_and_start_app(rabbit: RabbitCluster) -> None:
    node = rabbit.nodes[2]
    queue = _quorum_queue(f"qq-app-{uuid.uuid4().hex[:8]}")
    rabbit.stop_app(node)
    try:
        assert node not in rabbit.running()
        assert node.pid is not None  # the VM stays
        _wait("node 3's listener closed", lambda: _refuses(node.amqp_port), 20)
        urls = _kombu_urls(rabbit, first=node.index)
        _publish(urls, queue, "while node 3 is out")
        assert node.name not in rabbit.cluster_status()["running_nodes"]
    finally:
        rabbit.start_app(node)
    assert rabbit.running() == rabbit.nodes
    assert not _refuses(node.amqp_port)
    assert _consume([rabbit.amqp_urls(VHOST)[2]], queue, 1) == ["while node 3 is out"]


def test_full_stop_and_start_keeps_quorum_queue_messages(rabbit: RabbitCluster) -> None:
    queue = _quorum_queue(f"qq-stop-{uuid.uuid4().hex[:8]}")
    bodies = [f"message {i}" for i in range(3)]
    _publish(_kombu_urls(rabbit), queue, *bodies)

    started = time.monotonic()
    rabbit.stop_all()
    assert rabbit.running() == []
    assert all(_refuses(n.amqp_port) for n in rabbit.nodes)
    rabbit.start_all()
    print(f"full stop and start: {time.monotonic() - started:.1f}s")

    assert rabbit.running() == rabbit.nodes
    assert _consume(_kombu_urls(rabbit), queue, 3) == bodies


# -- Galera ------------------------------------------------------------------


def _connect(galera: GaleraCluster, node: GaleraNode, **kwargs: Any) -> Any:
    return galera.connect(node, "ha_test", **kwargs)


@pytest.fixture
def table(galera: GaleraCluster) -> Iterator[str]:
    galera.create_database("ha_test")
    name = f"t_{uuid.uuid4().hex[:8]}"
    galera.execute(
        galera.nodes[0], f"CREATE TABLE ha_test.{name} (id INT PRIMARY KEY, v VARCHAR(40))"
    )
    yield name
    galera.execute(None, f"DROP TABLE IF EXISTS ha_test.{name}")


def test_galera_cluster_is_formed(galera: GaleraCluster) -> None:
    for node in galera.nodes:
        status = galera.status(node)
        assert status["wsrep_cluster_size"] == 3, node
        assert status["wsrep_local_state_comment"] == "Synced", node
        assert status["wsrep_ready"] == "ON", node
    assert (
        galera.url(galera.nodes[1])
        == f"mysql+pymysql://root@127.0.0.1:{galera.nodes[1].port}/test"
    )


def test_row_written_on_node1_is_read_on_node3(galera: GaleraCluster, table: str) -> None:
    galera.execute(galera.nodes[0], f"INSERT INTO ha_test.{table} VALUES (1, 'from node 1')")
    conn = _connect(galera, galera.nodes[2])
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION wsrep_sync_wait = 1")
            cur.execute(f"SELECT v FROM {table} WHERE id = 1")
            assert cur.fetchall() == (("from node 1",),)
    finally:
        conn.close()


def test_concurrent_update_on_two_nodes_fails_certification(
    galera: GaleraCluster, table: str
) -> None:
    import pymysql

    galera.execute(galera.nodes[0], f"INSERT INTO ha_test.{table} VALUES (1, 'initial')")
    node1, node2 = galera.nodes[0], galera.nodes[1]
    before = galera.status(node2)["wsrep_local_bf_aborts"]
    one = _connect(galera, node1, autocommit=False)
    two = _connect(galera, node2, autocommit=False)
    try:
        with one.cursor() as c1, two.cursor() as c2:
            c2.execute("SET SESSION wsrep_sync_wait = 1")
            c2.execute(f"SELECT v FROM {table} WHERE id = 1")
            c1.execute(f"UPDATE {table} SET v = 'node 1' WHERE id = 1")
            c2.execute(f"UPDATE {table} SET v = 'node 2' WHERE id = 1")
            one.commit()
            with pytest.raises(pymysql.err.OperationalError) as failed:
                two.commit()
        print(f"the loser's COMMIT raised {failed.value!r}")
        assert failed.value.args[0] == 1213
        assert "Deadlock" in failed.value.args[1]
    finally:
        one.close()
        two.close()
    assert galera.status(node2)["wsrep_local_bf_aborts"] > before
    for node in galera.nodes:
        rows = galera.execute(node, f"SELECT v FROM ha_test.{table} WHERE id = 1")
        assert rows == [("node 1",)], node


class _Writer(threading.Thread):
    """Inserts rows on one node, one per transaction, until stopped."""

    def __init__(self, galera: GaleraCluster, node: GaleraNode, table: str) -> None:
        super().__init__(daemon=True)
        self.galera, self.node, self.table = galera, node, table
        self.written = 0
        self.failures: list[Exception] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        conn = _connect(self.galera, self.node)
        try:
            with conn.cursor() as cur:
                while not self.stopping.is_set():
                    try:
                        cur.execute(
                            f"INSERT INTO {self.table} VALUES (%s, 'row')", (self.written + 1,)
                        )
                        self.written += 1
                    except Exception as exc:  # noqa: BLE001 - counted, the test checks
                        self.failures.append(exc)
                        time.sleep(0.1)
        finally:
            conn.close()


def test_sigkill_of_node2_under_writes_and_rejoin(galera: GaleraCluster, table: str) -> None:
    node1, node2, node3 = galera.nodes
    writer = _Writer(galera, node1, table)
    writer.start()
    try:
        _wait("writes", lambda: writer.written >= 50, 30)
        galera.kill(node2)
        assert node2.pid is None
        _wait("a cluster of 2", lambda: galera.status(node1)["wsrep_cluster_size"] == 2, 30)
        at_kill = writer.written
        _wait("writes without node 2", lambda: writer.written >= at_kill + 100, 30)
        took = galera.rejoin(node2)
        print(f"rejoin took {took:.1f}s by {node2.last_transfer}")
        after_rejoin = writer.written
        _wait("writes after the rejoin", lambda: writer.written >= after_rejoin + 20, 30)
    finally:
        writer.stopping.set()
        writer.join(30)
    assert writer.failures == []
    # Its position recovered from InnoDB, the node catches up by IST.
    assert node2.last_transfer == "IST"
    for node in (node1, node2, node3):
        status = galera.status(node)
        assert status["wsrep_cluster_size"] == 3, node
        assert status["wsrep_local_state_comment"] == "Synced", node
    conn = _connect(galera, node2)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION wsrep_sync_wait = 1")
            cur.execute(f"SELECT COUNT(*), MAX(id) FROM {table}")
            assert cur.fetchone() == (writer.written, writer.written)
    finally:
        conn.close()


def test_failover_proxy_moves_new_connections_to_the_backup(galera: GaleraCluster) -> None:
    import pymysql

    primary, backup = galera.nodes[2], galera.nodes[0]
    proxy = FailoverProxy([("127.0.0.1", primary.port), ("127.0.0.1", backup.port)])
    proxy.start()

    def served_by() -> int:
        conn = pymysql.connect(host="127.0.0.1", port=proxy.port, user="root", connect_timeout=5)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@port")
                return cur.fetchone()[0]
        finally:
            conn.close()

    try:
        assert served_by() == primary.port
        held = pymysql.connect(host="127.0.0.1", port=proxy.port, user="root", read_timeout=10)
        galera.kill(primary)
        with pytest.raises(pymysql.err.OperationalError) as cut:
            with held.cursor() as cur:
                cur.execute("SELECT 1")
        assert cut.value.args[0] in (2006, 2013), cut.value
        assert served_by() == backup.port
        assert proxy.connections_by_backend == {
            ("127.0.0.1", primary.port): 2,
            ("127.0.0.1", backup.port): 1,
        }
        _wait(
            "the cut pair closed",
            lambda: proxy.active_by_backend[("127.0.0.1", primary.port)] == 0,
            10,
        )
    finally:
        proxy.close()
        if not primary.alive:
            galera.rejoin(primary)
    assert galera.status(primary)["wsrep_cluster_size"] == 3


def test_failover_proxy_refuses_when_no_backend_accepts() -> None:
    dead = _unused_port()
    with FailoverProxy([("127.0.0.1", dead)]) as proxy:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        try:
            assert client.recv(1) == b""
        finally:
            client.close()
        _wait("the refusal counted", lambda: proxy.refused == 1, 5)
    assert proxy.connections_by_backend == {("127.0.0.1", dead): 0}


def _unused_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_workdir_is_emptied_by_close(tmp_path: pathlib.Path) -> None:
    cluster = GaleraCluster(tmp_path / "g", size=1)
    cluster._prepare()
    assert (tmp_path / "g" / "galera1" / "my.cnf").exists()
    cluster.close()
    cluster.close()
    assert list((tmp_path / "g").iterdir()) == []
