"""The HA run: resize_sched over clustered RabbitMQ and Galera, under node faults.

    python -m tests.ha.run --seed 7

Starts on loopback a three-node RabbitMQ cluster (quorum queues) and a
three-node MariaDB Galera cluster (:mod:`tests.ha.cluster`), then the chaos
soak's deployment (:class:`tests.chaos.stack.Stack`) over them: the API, two
conductor services whose databases are on different Galera nodes (each
through a failover proxy whose primary is its own node), two computes, with
Placement on the local MariaDB. The soak's clients run while the faults of
:data:`tests.ha.faults.SCHEDULE` are injected one after the other, each
followed by a recovery window. After quiescence the soak's invariants are
checked, the daemons' logs are read (casts sent and received, database
retries, errors) and a table gives each fault's window. ``doc/ha.rst``
describes the deployment, the schedule and the output.

Exit codes: 0 every criterion met (no violation, no cast lost, every fault
recovered within ``--recover-within`` seconds); 1 a violation or a criterion
missed; 2 the harness could not run (a cluster or daemon that did not start);
130 interrupted. Every process, cluster and scratch database is removed on
every exit.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import threading
import time
import urllib.parse
import uuid
from typing import Any

from tests.chaos import soak as chaos_soak
from tests.chaos.clients import Client, Tally
from tests.chaos.soak import FLAVORS, Soak
from tests.chaos.stack import Stack
from tests.ha import faults as ha_faults
from tests.ha.options import parse_args, rabbit_options
from tests.ha.rabbit import ClusterVhost
from tests.ha.report import print_table
from tests.harness import (
    EXIT_FAILED,
    EXIT_HARNESS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    HarnessError,
    run_main,
)

__all__ = [
    "EXIT_FAILED",
    "EXIT_HARNESS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "HaRun",
    "main",
    "parse_args",
    "print_table",
]
#: The topic whose quorum queue's leader the broker faults hit.
CONDUCTOR_QUEUE = "conductor"
#: Galera nodes: each conductor's and the API's primary, then its backups.
PRIMARIES = {"conductor": (1, 2, 3), "conductor2": (2, 3, 1), "api": (3, 1, 2)}
#: The harness's own reads and writes (flavors, the checks).
HARNESS_NODES = (1, 3, 2)
#: The Galera node killed under load: conductor2's primary.
GALERA_VICTIM = 2


def _backend(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 3306


class HaRun(Soak):
    """One HA run: the clusters, the stack over them, the faults, the figures."""

    def __init__(self, args: argparse.Namespace, workdir: pathlib.Path) -> None:
        # NOTE: Soak's state, not its __init__ (that builds the soak's own stack).
        self.args = args
        self.workdir = workdir
        self.tally = Tally()
        self.stop_clients = threading.Event()
        self.clients: list[Client] = []
        self.kills: dict[str, int] = {}
        self.restarts_after_exit: dict[str, int] = {}
        self.violations: list[Any] = []
        self.timings: dict[str, float] = {}
        self.checks_run = 0
        self.notes: list[Any] = []
        self.rabbit: Any = None
        self.galera: Any = None
        self.proxies: list[Any] = []
        self.stack: Stack | None = None  # type: ignore[assignment]
        self.faults = ha_faults.schedule()
        self.began_clients = 0.0
        self.chaos_end = 0.0
        self.quiet_end = 0.0
        self.trace: ha_faults.Trace | None = None
        self.galera_status: dict[str, Any] = {}
        self.missed: list[str] = []

    # -- start --------------------------------------------------------------------------

    def start_clusters(self) -> None:
        from tests.ha import cluster

        started = time.monotonic()
        errors: list[BaseException] = []

        def start(attr: str, factory: Any) -> None:
            try:
                factory().start()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def rabbit() -> Any:
            self.rabbit = cluster.RabbitCluster(self.workdir / "rabbit")
            return self.rabbit

        def galera() -> Any:
            self.galera = cluster.GaleraCluster(self.workdir / "galera")
            return self.galera

        threads = [
            threading.Thread(target=start, args=("rabbit", rabbit)),
            threading.Thread(target=start, args=("galera", galera)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise HarnessError(f"a cluster did not start: {errors[0]!r}") from errors[0]
        self.timings["clusters"] = time.monotonic() - started
        self.progress(f"clusters up in {self.timings['clusters']:.0f} s")

    def galera_url(self, database: str, nodes: tuple[int, ...]) -> str:
        """A URL through a new failover proxy over ``nodes`` (the first is the primary)."""
        from tests.ha import cluster

        backends = [_backend(self.galera.url(self.galera_node(n), database)) for n in nodes]
        proxy = cluster.FailoverProxy(backends)
        self.proxies.append(proxy)
        proxy.start()
        return self.galera.url(self.galera_node(nodes[0]), database, port=proxy.port)

    def galera_node(self, number: int) -> Any:
        """Galera node ``number`` (1, 2, 3)."""
        return self.galera.nodes[number - 1]

    def run(self) -> None:
        args = self.args
        started = time.monotonic()
        self.start_clusters()
        name = f"rs_ha_{uuid.uuid4().hex[:10]}"
        self.galera.create_database(name)
        urls = {daemon: self.galera_url(name, nodes) for daemon, nodes in PRIMARIES.items()}
        self.stack = Stack(
            self.workdir,
            "",
            args.placement_db_url,
            strategy=args.strategy,
            computes=args.computes,
            seed=args.seed,
            fault_rate=0.0,
            placement_timeout=10.0,
            options=chaos_soak.config_text(args) + rabbit_options(),
            prefix="rs_ha_",
            vhost=ClusterVhost(self.rabbit, name),
            database=self.galera_url(name, HARNESS_NODES),
            database_urls=urls,
            conductors=2,
            conductor_workers=1,
        )
        self.stack.start(self.progress)
        self.timings["start-up"] = time.monotonic() - started
        db = self.stack.db
        assert db is not None
        flavors = [db.flavor_create(*spec).flavorid for spec in FLAVORS]
        for i in range(args.clients):
            self.clients.append(
                Client(
                    i,
                    args.seed,
                    self.stack.endpoint,
                    flavors,
                    self.tally,
                    self.stop_clients,
                    max_servers=args.servers_per_client,
                    moves=args.moves,
                    op_timeout=60.0,
                )
            )
        # NOTE: the probe: one server resized, confirmed or reverted over and
        # over, so that every window has resizes to time the recovery by.
        self.clients.append(
            Client(
                args.clients,
                args.seed,
                self.stack.endpoint,
                flavors,
                self.tally,
                self.stop_clients,
                max_servers=1,
                delete_during=0.0,
                op_timeout=60.0,
                moves=(),
            )
        )
        self.chaos()
        self.quiesce()
        self.quiet_end = time.time()
        self.galera_status = self.read_galera_status()

    # -- the faults ---------------------------------------------------------------------

    def keep_watching(self, seconds: float) -> None:
        """Wait, restarting a daemon that exited (a finding for the API or a conductor)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.watch(pending=set())
            self.check_clients()
            time.sleep(0.2)

    def inject(self, fault: ha_faults.Fault) -> None:
        """Inject ``fault``, then undo it (runs in a thread of its own)."""
        args, rabbit, galera = self.args, self.rabbit, self.galera
        vhost = self.stack.vhost.name if self.stack is not None else ""
        try:
            if fault.kind in ("rabbit-leader-kill", "rabbit-stop-app"):
                node = rabbit.queue_leader(CONDUCTOR_QUEUE, vhost)
                if node is None:
                    raise HarnessError(f"no leader for the {CONDUCTOR_QUEUE!r} queue")
                fault.target = str(node)
                fault.t0 = fault.clock = time.time()
                if fault.kind == "rabbit-leader-kill":
                    rabbit.kill(node)
                    time.sleep(args.down)
                    rabbit.start_node(node)
                else:
                    rabbit.stop_app(node)
                    time.sleep(args.stop_app)
                    rabbit.start_app(node)
            elif fault.kind == "rabbit-full-stop":
                fault.target = "every broker node"
                fault.t0 = time.time()
                rabbit.stop_all()
                time.sleep(args.outage)
                rabbit.start_all()
                fault.clock = time.time()
            elif fault.kind == "galera-kill":
                fault.target = f"galera node {GALERA_VICTIM}"
                fault.t0 = fault.clock = time.time()
                galera.kill(self.galera_node(GALERA_VICTIM))
                time.sleep(args.down)
                rejoin = galera.rejoin(self.galera_node(GALERA_VICTIM))
                fault.detail["rejoin_s"] = round(float(rejoin), 1)
            else:  # pragma: no cover - SCHEDULE names only the kinds above
                raise ValueError(fault.kind)
        except Exception as exc:  # noqa: BLE001 - the fault's row says it
            fault.error = f"{type(exc).__name__}: {exc}"
            fault.t0 = fault.t0 or time.time()
            fault.clock = fault.clock or time.time()
        fault.restored = time.time()

    def chaos(self) -> None:
        args = self.args
        self.progress(
            f"{args.clients} clients and a resize probe; {len(self.faults)} faults: "
            + ", ".join(f.label for f in self.faults)
        )
        self.began_clients = time.time()
        started = time.monotonic()
        for client in self.clients:
            client.start()
        self.keep_watching(args.warmup)
        previous: ha_faults.Fault | None = None
        for fault in self.faults:
            fault.start = time.time()
            if previous is not None:
                previous.end = fault.start
            previous = fault
            injector = threading.Thread(target=self.inject, args=(fault,), daemon=True)
            injector.start()
            self.progress(f"  {fault.label}: {ha_faults.DESCRIPTIONS[fault.kind]}")
            while injector.is_alive():
                self.keep_watching(0.5)
            if fault.error:
                self.progress(f"  {fault.label}: could not inject or undo it: {fault.error}")
            wait = max(fault.clock + args.window, fault.restored + args.settle) - time.time()
            self.progress(
                f"  {fault.label} on {fault.target} undone after "
                f"{fault.restored - fault.t0:.0f} s; recovery window {max(wait, 0):.0f} s more"
            )
            self.keep_watching(max(wait, 0.0))
        self.chaos_end = time.time()
        if previous is not None:
            previous.end = self.chaos_end
        self.stop_clients.set()
        self.progress("faults over: clients stopping")
        for client in self.clients:
            client.join(timeout=90)
        self.check_clients()
        self.timings["faults"] = time.monotonic() - started
        args.duration = self.chaos_end - self.began_clients

    def read_galera_status(self) -> dict[str, Any]:
        status = {}
        for node in (1, 2, 3):
            try:
                wsrep = self.galera.status(self.galera_node(node))
                status[str(node)] = {
                    k: wsrep.get(k)
                    for k in ("wsrep_cluster_size", "wsrep_local_state_comment", "wsrep_ready")
                    if k in wsrep
                }
            except Exception as exc:  # noqa: BLE001 - shown in the figures
                status[str(node)] = {"error": str(exc)}
        return status

    # -- the figures --------------------------------------------------------------------

    def ha_figures(self) -> dict[str, Any]:
        stack = self.stack
        assert stack is not None
        logs = {name: d.log_path for name, d in stack.daemons.items()}
        # NOTE: a cast sent in the last seconds may still be on its way.
        cutoff = time.time() - 10.0
        self.trace = trace = ha_faults.read_logs(logs)
        events = list(self.tally.events)
        errors = list(self.tally.server_error_times)
        rows = []
        first = self.faults[0].start if self.faults and self.faults[0].start else self.chaos_end
        rows.append(
            (
                "warm-up",
                None,
                ha_faults.window_figures(self.began_clients, first, events, trace, errors),
            )
        )
        for fault in self.faults:
            if not fault.t0:
                continue
            figures = ha_faults.window_figures(
                fault.start, fault.end or self.chaos_end, events, trace, errors, clock=fault.clock
            )
            rows.append((fault.label, fault, figures))
        rows.append(
            (
                "quiescence",
                None,
                ha_faults.window_figures(self.chaos_end, cutoff, events, trace, errors),
            )
        )
        # NOTE: casts sent while the stack started may find no queue yet (the
        # first consumer declares it): only what was sent under test counts.
        lost = [i for i in trace.lost() if self.began_clients <= trace.sent[i][0] < cutoff]
        early = [i for i in trace.lost() if trace.sent[i][0] < self.began_clients]
        return {
            "windows": [
                {
                    "window": label,
                    "fault": None
                    if fault is None
                    else {
                        "kind": fault.kind,
                        "target": fault.target,
                        "t0": round(fault.t0, 3),
                        "clock_after_t0_s": round(fault.clock - fault.t0, 1),
                        "undone_after_s": round(fault.restored - fault.t0, 1),
                        "window_s": round(fault.end - fault.t0, 1),
                        "error": fault.error,
                        **fault.detail,
                    },
                    **figures,
                }
                for label, fault, figures in rows
            ],
            "casts": {
                "sent": len(trace.sent),
                "received": len(trace.received),
                "lost": len(lost),
                "lost_ids": [
                    {"id": i, "sender": trace.sent[i][1], "method": trace.sent[i][2]}
                    for i in lost[:20]
                ],
                "lost_before_clients": len(early),
                "redelivered": len(trace.redelivered()),
                "redelivered_ids": [
                    {
                        "id": i,
                        "sender": trace.sent.get(i, (0, "?", "?"))[1],
                        "method": trace.sent.get(i, (0, "?", "?"))[2],
                        "second_delivery_then": trace.after_second(i),
                    }
                    for i in trace.redelivered()[:20]
                ],
                "refused": len(trace.refused),
            },
            "db_retries": len(trace.retries),
            "db_retry_lines": [f"{n}: {line}" for _, n, line in trace.retries[:5]],
            "error_lines": [f"{n}: {line}" for _, n, line in trace.errors[:10]],
            "galera": self.galera_status,
        }

    def criteria(self, ha: dict[str, Any]) -> list[str]:
        """What the run missed; empty when it met every criterion."""
        missed = [f"[violation] {v}" for v in self.violations]
        if ha["casts"]["lost"]:
            missed.append(f"{ha['casts']['lost']} casts lost")
        for window in ha["windows"]:
            fault = window["fault"]
            if fault is None:
                continue
            if fault["error"]:
                missed.append(f"{window['window']}: {fault['error']}")
            took = window["first_resize_s"]
            if took is None or took > self.args.recover_within:
                missed.append(
                    f"{window['window']}: no successful resize within "
                    f"{self.args.recover_within:.0f} s (first: {took})"
                )
        return missed

    # -- as tests.harness.run_main drives it --------------------------------------------

    def collect(self) -> dict[str, Any]:
        self.run()
        figures = self.figures()
        figures["checks_run"] = self.checks_run
        figures["ha"] = self.ha_figures()
        self.require_operations()
        self.missed = self.criteria(figures["ha"])
        return figures

    def clean_up(self, figures: dict[str, Any]) -> dict[str, Any]:
        self.stop_clients.set()
        self.close()
        return figures

    def report(self, figures: dict[str, Any]) -> None:
        figures["missed"] = self.missed
        print_table(figures)

    def failed(self, figures: dict[str, Any]) -> bool:
        if self.missed:
            print("\ncriteria missed:")
            for line in self.missed:
                print(f"  {line}")
        return bool(self.missed)

    def keep_workdir(self, figures: dict[str, Any]) -> bool:
        return False

    def close(self) -> None:
        if self.stack is not None:
            self.stack.close()
        for what, thing in [("proxy", p) for p in self.proxies] + [
            ("Galera", self.galera),
            ("RabbitMQ", self.rabbit),
        ]:
            if thing is None:
                continue
            try:
                thing.close()
            except Exception as exc:  # noqa: BLE001 - keep cleaning up
                print(f"ha run: closing {what} failed: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.placement_db_url:
        print(
            "ha run: harness error: set --placement-db-url or RESIZE_SCHED_TEST_MYSQL_URL",
            file=sys.stderr,
        )
        return EXIT_HARNESS
    return run_main(
        "ha run",
        f"HA run: seed {args.seed}, strategy {args.strategy}, workdir {{workdir}}",
        args.workdir,
        "rs-ha-",
        lambda workdir: HaRun(args, workdir),
        json_path=args.json,
        failed_verdict="FAIL (violations or criteria missed)",
    )


if __name__ == "__main__":
    sys.exit(main())
