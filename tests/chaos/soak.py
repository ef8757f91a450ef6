"""The chaos soak: the real multi-process deployment under faults, then a check.

    python -m tests.chaos.soak --seed 7 --duration 90

Starts the deployment of :mod:`tests.chaos.stack` (API, a two-worker
conductor, compute daemons over RabbitMQ, Placement in its own processes on
MariaDB behind the fault proxy), lets ``--clients`` threads create, resize,
move (cold and live migration, shelve, offload, unshelve), confirm, revert
and delete servers for ``--duration`` seconds while Placement
requests get random faults and conductor workers and compute daemons are
SIGKILLed, then stops the chaos, waits for the sweep to settle everything and
checks Placement against the database (:mod:`tests.chaos.checks`).
``doc/chaos-soak.rst`` describes the options and the output.

Exit codes: 0 no violation; 1 violations (each printed); 2 the harness could
not run (a backend missing, a daemon that did not start, a client that
crashed): not a finding about resize_sched; 130 interrupted (Ctrl-C or
SIGTERM). Every process, scratch database and virtual host is removed on
every exit.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import random
import sys
import threading
import time
from typing import Any

from tests.chaos import checks, report
from tests.chaos.clients import OPERATIONS, Client, Tally
from tests.chaos.options import FLAVORS, STRATEGIES, config_text, parse_args
from tests.chaos.proxy import KINDS
from tests.chaos.stack import Stack
from tests.harness import (
    EXIT_FAILED,
    EXIT_HARNESS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    HarnessError,
    Interrupted,
    run_main,
)

#: Exit code 1 of the soak: violations (each printed).
EXIT_VIOLATIONS = EXIT_FAILED
#: What tests/ha and the tests take from here (the options live in tests.chaos.options).
__all__ = [
    "EXIT_HARNESS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_VIOLATIONS",
    "FLAVORS",
    "STRATEGIES",
    "Interrupted",
    "Soak",
    "config_text",
    "main",
    "parse_args",
]


class Soak:
    """One run: the stack, the clients, the killer, the check, the figures."""

    def __init__(self, args: argparse.Namespace, workdir: pathlib.Path) -> None:
        self.args = args
        self.workdir = workdir
        self.rng = random.Random(f"kills-{args.seed}")
        self.tally = Tally()
        self.stop_clients = threading.Event()
        self.clients: list[Client] = []
        self.kills: collections.Counter[str] = collections.Counter()
        self.restarts_after_exit: collections.Counter[str] = collections.Counter()
        self.violations: list[checks.Violation] = []
        self.timings: dict[str, float] = {}
        self.checks_run = 0
        self.notes: list[checks.Violation] = []
        self.stack = Stack(
            workdir,
            args.transport_url,
            args.db_url,
            strategy=args.strategy,
            computes=args.computes,
            seed=args.seed,
            fault_rate=args.fault_rate,
            placement_timeout=args.placement_timeout,
            fault_kinds=args.faults,
            options=config_text(args),
        )

    @staticmethod
    def progress(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    # -- as tests.harness.run_main drives it --------------------------------------------

    def collect(self) -> dict[str, Any]:
        self.run()
        figures = self.figures()
        self.require_operations()
        return figures

    def require_operations(self) -> None:
        """A run whose clients completed nothing checked nothing: no verdict."""
        if self.tally.total() == 0:
            raise HarnessError("the clients completed no operation at all")

    def clean_up(self, figures: dict[str, Any]) -> dict[str, Any]:
        self.stop_clients.set()
        if self.stack.proxy is not None:
            self.stack.proxy.chaos(False)
        if not figures:
            try:
                figures = self.figures()
            except Exception:  # noqa: BLE001 - the stack never came up
                figures = {}
        self.stack.close()
        return figures

    def report(self, figures: dict[str, Any]) -> None:
        report.print_report(figures)

    def failed(self, figures: dict[str, Any]) -> bool:
        return bool(self.violations)

    def keep_workdir(self, figures: dict[str, Any]) -> bool:
        # NOTE: an API 5xx is no violation, but its log is worth keeping.
        return bool(figures.get("api_5xx"))

    # -- phases -------------------------------------------------------------------------

    def run(self) -> None:
        started = time.monotonic()
        self.stack.start(self.progress)
        self.timings["start-up"] = time.monotonic() - started
        db = self.stack.db
        assert db is not None
        flavors = [db.flavor_create(*spec).flavorid for spec in FLAVORS]
        for i in range(self.args.clients):
            self.clients.append(
                Client(
                    i,
                    self.args.seed,
                    self.stack.endpoint,
                    flavors,
                    self.tally,
                    self.stop_clients,
                    max_servers=self.args.servers_per_client,
                    moves=self.args.moves,
                )
            )
        self.chaos()
        self.quiesce()

    def chaos(self) -> None:
        args, stack = self.args, self.stack
        assert stack.proxy is not None
        self.progress(
            f"chaos for {args.duration:.0f} s: {args.clients} clients, faults on "
            f"{args.fault_rate:.0%} of Placement requests, a SIGKILL every "
            f"{args.kill_every[0]:.0f}-{args.kill_every[1]:.0f} s"
        )
        started = time.monotonic()
        end = started + args.duration
        stack.proxy.chaos(True)
        for client in self.clients:
            client.start()
        next_kill = started + self.rng.uniform(*args.kill_every)
        restarts: list[tuple[float, str]] = []
        last_note = started
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_kill:
                restarts += self.kill_one()
                next_kill = now + self.rng.uniform(*args.kill_every)
            for due, name in list(restarts):
                if now >= due:
                    restarts.remove((due, name))
                    stack.daemons[name].start(stack.env)
            self.watch(pending={name for _, name in restarts})
            self.check_clients()
            if now - last_note >= 30:
                last_note = now
                self.progress(
                    f"  {now - started:.0f} s: {self.tally.total()} operations, "
                    f"{sum(stack.proxy.counts.values())} faults, {sum(self.kills.values())} kills"
                )
            time.sleep(0.2)
        stack.proxy.chaos(False)
        self.stop_clients.set()
        self.progress("chaos over: faults off, kills stopped, clients stopping")
        for client in self.clients:
            client.join(timeout=90)
        self.check_clients()
        for _, name in restarts:
            stack.daemons[name].start(stack.env)
        self.timings["chaos"] = time.monotonic() - started

    def kill_one(self) -> list[tuple[float, str]]:
        """SIGKILL a conductor worker or a compute daemon; the restarts to make."""
        stack = self.stack
        if self.rng.random() < 0.5:
            victim = stack.kill_conductor_worker(self.rng)
            if victim is not None:
                self.kills["conductor worker"] += 1
                self.progress(f"  SIGKILL {victim}")
            return []
        running = [n for n in stack.compute_names() if stack.daemons[n].alive()]
        if not running:
            return []
        name = self.rng.choice(sorted(running))
        stack.daemons[name].kill()
        self.kills["compute daemon"] += 1
        self.progress(f"  SIGKILL {name}")
        return [(time.monotonic() + self.rng.uniform(1.0, 5.0), name)]

    def watch(self, pending: set[str]) -> None:
        """Restart a compute daemon that exited on its own (as systemd would); a
        dead API or conductor is a finding, and is restarted too."""
        for name, daemon in self.stack.daemons.items():
            if name in pending or daemon.alive():
                continue
            if time.monotonic() - daemon.started_at < 2.0:
                continue  # NOTE: no restart loop faster than a supervisor's
            code = daemon.proc.returncode if daemon.proc is not None else None
            if name.startswith("compute"):
                # NOTE: a compute that cannot reach Placement at start exits 1
                # for its supervisor to restart it: expected under faults.
                self.restarts_after_exit[name] += 1
            else:
                self.violations.append(
                    checks.Violation("daemon", f"{name} exited with {code} during the soak")
                )
            self.progress(f"  {name} exited with {code}; restarting it")
            daemon.start(self.stack.env)

    def check_clients(self) -> None:
        for client in self.clients:
            if client.crash is not None:
                raise HarnessError(f"client {client.index} crashed: {client.crash!r}")

    def quiesce(self) -> None:
        """Wait until two checks in a row, ten seconds apart, find nothing wrong."""
        stack, args = self.stack, self.args
        assert stack.proxy is not None and stack.db is not None
        started = time.monotonic()
        deadline = started + args.quiesce_timeout
        self.progress("quiescence: waiting for held writes, workers and computes")
        if not stack.proxy.wait_no_holds(timeout=60):
            raise HarnessError("held Placement writes were not delivered within 60 s")
        workers = stack.conductors * stack.workers_per_conductor
        stack._wait(
            lambda: len(stack.all_conductor_workers()) == workers, f"{workers} conductor workers"
        )
        stack._wait(
            lambda: all(stack.daemons[n].alive() for n in stack.compute_names()),
            "every compute daemon",
        )
        client = stack.placement.client()
        clean_since: float | None = None
        found: list[checks.Violation] = []
        while True:
            self.watch(pending=set())
            everything = checks.check(stack.db, client, stack.providers, self.tally.deletes)
            found = [v for v in everything if v.blocking]
            self.notes = [v for v in everything if not v.blocking]
            self.checks_run += 1
            now = time.monotonic()
            if not found:
                if clean_since is not None and now - clean_since >= 10:
                    break
                clean_since = clean_since or now
            else:
                clean_since = None
            if now > deadline:
                break
            time.sleep(3)
        self.violations += found
        self.timings["quiescence"] = time.monotonic() - started
        self.progress(
            f"quiescence: {'settled' if not found else 'NOT settled'} after "
            f"{self.timings['quiescence']:.0f} s ({self.checks_run} checks)"
        )

    # -- the report ---------------------------------------------------------------------

    def figures(self) -> dict[str, Any]:
        """Everything the report prints (and ``--json`` writes)."""
        proxy = self.stack.proxy
        ops = {
            op: {outcome: self.tally.ops[(op, outcome)] for outcome in report.OUTCOME_COLUMNS}
            for op in OPERATIONS
        }
        return {
            "seed": self.args.seed,
            "strategy": self.args.strategy,
            "clients": self.args.clients,
            "computes": self.args.computes,
            "moves": list(self.args.moves),
            "duration_s": self.args.duration,
            "operations": ops,
            "operations_total": self.tally.total(),
            "deletes_during": dict(self.tally.during),
            "faults": {k: proxy.counts[k] for k in KINDS} if proxy else {},
            "placement_requests": proxy.count if proxy else 0,
            "kills": dict(self.kills),
            "restarts_after_exit": dict(self.restarts_after_exit),
            "api_5xx": list(self.tally.server_errors),
            "violations": [{"kind": v.kind, "detail": v.detail} for v in self.violations],
            "notes": [{"kind": v.kind, "detail": v.detail} for v in self.notes],
            "timings_s": {k: round(v, 1) for k, v in self.timings.items()},
            **report.from_logs(self.stack.daemons),
        }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = [
        what
        for what, value in (
            ("--transport-url or RESIZE_SCHED_TEST_RABBIT_URL", args.transport_url),
            ("--db-url or RESIZE_SCHED_TEST_MYSQL_URL", args.db_url),
        )
        if not value
    ]
    if missing:
        print(f"chaos soak: harness error: set {' and '.join(missing)}", file=sys.stderr)
        return EXIT_HARNESS
    return run_main(
        "chaos soak",
        f"chaos soak: seed {args.seed}, strategy {args.strategy}, workdir {{workdir}}",
        args.workdir,
        "rs-chaos-",
        lambda workdir: Soak(args, workdir),
        json_path=args.json,
        failed_verdict="FAIL (violations)",
    )


if __name__ == "__main__":
    sys.exit(main())
