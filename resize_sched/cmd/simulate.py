"""``resize-sched-simulate``: what each claim strategy lets through, against an oracle.

Runs :mod:`resize_sched.simulate` for every utilisation asked, every
strategy from the same seeded starting state, then prints the table and,
when asked, writes the JSON document and the plots (``doc/simulation.rst``
explains every figure).
"""

import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import fields, replace

from oslo_config import cfg, types
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched.cmd import setup_logging
from resize_sched.simulate import settings as simulation

LOG = logging.getLogger(__name__)

PROG = "resize-sched-simulate"
DESCRIPTION = (
    "Simulate resizes on a cluster packed to a target utilisation, under each claim "
    "strategy from the same seeded starting state, against the real Placement embedded in "
    "this process, and count how many succeed against an oracle that ignores the "
    "server's own old allocation. Prints a table; --json and --plots-dir write the "
    "figures and PNG plots (the plots need the 'simulate' extra: pip install "
    "'resize_sched[simulate]'). The same seed and options give the same counts."
)
_DEFAULTS = simulation.Settings()

CLI_OPTS = [
    cfg.IntOpt(
        "hosts", default=_DEFAULTS.hosts, min=2, help="Compute hosts in the simulated cluster."
    ),
    cfg.IntOpt(
        "resizes",
        default=_DEFAULTS.resizes,
        min=1,
        help="Resizes per strategy and utilisation; more give steadier shares and take "
        "longer (each costs a few real Placement requests).",
    ),
    cfg.IntOpt(
        "workers",
        default=_DEFAULTS.workers,
        min=1,
        help="Concurrent workers; their Placement requests interleave in a seeded order. "
        "1 runs the resizes one after another, so no resize can lose a race.",
    ),
    cfg.ListOpt(
        "utilisation",
        item_type=types.Float(min=0.05, max=1.0),
        default=[f"{level:.2f}" for level in simulation.UTILISATIONS],
        help="Utilisations to pack the cluster to (share of its most used resource "
        "class), one run of every strategy per seed each; the success plot has one point "
        "per value.",
    ),
    cfg.FloatOpt(
        "revert-ratio",
        default=_DEFAULTS.revert_ratio,
        min=0.0,
        max=1.0,
        help="Share of the resizes reverted rather than confirmed.",
    ),
    cfg.IntOpt(
        "seed",
        default=_DEFAULTS.seed,
        help="First seed of the cluster, resizes and turns; the runs use --seeds "
        "consecutive seeds from it.",
    ),
    cfg.IntOpt(
        "seeds",
        default=simulation.SEEDS,
        min=1,
        help="Seeds per utilisation: each packs its own cluster and draws its own resizes. "
        "The table shows the mean share over them with the least and greatest, the "
        "success plot a band between those.",
    ),
    cfg.IntOpt(
        "verify-turns",
        default=_DEFAULTS.verify_turns,
        min=0,
        help="At most this many turns a resize waits in VERIFY_RESIZE before its "
        "confirm or revert (drawn from 0 to this): longer windows overlap more.",
    ),
    cfg.IntOpt(
        "sweep-every",
        default=_DEFAULTS.sweep_every,
        min=1,
        help="Arrivals between two runs of the sweep that retries failed restores "
        "(servers flagged needs_heal).",
    ),
    cfg.ListOpt(
        "strategies",
        default=list(simulation.STRATEGIES),
        help="Claim strategies to compare.",
    ),
    cfg.StrOpt(
        "workload",
        default=_DEFAULTS.workload,
        choices=simulation.WORKLOADS,
        help="resize: the workers resize. drain: the busiest host(s) are disabled as an "
        "operator would (os-services) and --drain-workers workers cold-migrate every "
        "server off them while the others resize the rest of the cluster; the table "
        "counts the moves, the refusals and what the drained host(s) still hold.",
    ),
    cfg.IntOpt(
        "drain-hosts",
        default=_DEFAULTS.drain_hosts,
        min=1,
        help="With --workload drain: how many of the busiest hosts to drain.",
    ),
    cfg.IntOpt(
        "drain-workers",
        default=_DEFAULTS.drain_workers,
        min=1,
        help="With --workload drain: workers that migrate (then resize once the drain "
        "is done); the others resize from the start.",
    ),
    cfg.StrOpt("json", metavar="PATH", help="Write every figure and outcome to this file."),
    cfg.StrOpt(
        "plots-dir",
        metavar="DIR",
        help="Write simulation-success.png and simulation-verify-held.png into this "
        "directory (needs matplotlib, the 'simulate' extra).",
    ),
    cfg.BoolOpt(
        "per-run",
        default=False,
        help="Also print the table of every run (one line per utilisation, seed and "
        "strategy), with the figures the summary sums.",
    ),
    cfg.BoolOpt("quiet", default=False, help="No progress bar on stderr."),
]


class Progress:
    """A one-line progress bar on stderr, drawn only on a terminal."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.label = ""
        self.enabled = enabled and sys.stderr.isatty()

    def step(self) -> None:
        self.done += 1
        self.draw()

    def draw(self) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // max(1, self.total)
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {self.label:<40}"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 90 + "\r")
            sys.stderr.flush()


#: Python's string hashing, fixed for the run (see :func:`main`).
HASH_SEED = "0"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the simulation; 0 on success, 1 on a usage or setup error.

    Run as the console script (``argv`` None), it first starts itself again
    with ``PYTHONHASHSEED`` fixed: Placement orders hosts of equal standing
    by way of sets and dicts of strings, whose order follows the string
    hashes, so with Python's per-process random hashing the scheduler would
    break ties differently from one run to the next, and the same seed would
    not give the same counts.
    """
    if argv is None and os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        env = {**os.environ, "PYTHONHASHSEED": HASH_SEED}
        command = [sys.executable, "-m", "resize_sched.cmd.simulate", *sys.argv[1:]]
        os.execve(sys.executable, command, env)
    conf = rs_conf.new_conf()
    conf.register_cli_opts(CLI_OPTS)
    rs_conf.parse_args(
        conf,
        sys.argv[1:] if argv is None else list(argv),
        description=DESCRIPTION,
        default_config_files=[],
        prog=PROG,
    )
    # NOTE: refused claims and failed resizes are what is counted, not news.
    conf.set_override(
        "default_log_levels",
        [
            *conf.default_log_levels,
            *(f"{name}=ERROR" for name in ("resize_sched", "placement", "alembic", "matplotlib")),
            "oslo_service=WARN",
        ],
    )
    setup_logging(conf)
    from resize_sched import strategies

    unknown = sorted(set(conf.strategies) - set(strategies.installed()))
    if unknown:
        print(f"{PROG}: unknown strategies: {', '.join(unknown)}", file=sys.stderr)
        return 1
    if conf.plots_dir:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(
                f"{PROG}: the plots need matplotlib: install the 'simulate' extra "
                "(pip install 'resize_sched[simulate]'), or leave out --plots-dir",
                file=sys.stderr,
            )
            return 1
        os.makedirs(conf.plots_dir, exist_ok=True)

    try:
        from resize_sched.simulate import report, run
    except ImportError as exc:
        print(
            f"{PROG}: {exc}; the simulation runs the real Placement: install the 'simulate' "
            "extra (pip install 'resize_sched[simulate]')",
            file=sys.stderr,
        )
        return 1
    # NOTE: every setting but the utilisation (swept below) is an option of
    # the same name.
    base = simulation.Settings(
        **{
            f.name: getattr(conf, f.name)
            for f in fields(simulation.Settings)
            if f.name != "utilisation"
        }
    )
    levels = sorted(set(conf.utilisation))
    seeds = [base.seed + n for n in range(conf.seeds)]
    progress = Progress(
        len(levels) * len(seeds) * len(conf.strategies) * base.resizes, not conf.quiet
    )
    started = time.monotonic()
    rows, results, drain_rows = [], [], []
    try:
        for level in levels:
            for seed in seeds:
                settings = replace(base, utilisation=level, seed=seed)
                progress.label = f"utilisation {level:.2f}, seed {seed}: packing"
                progress.draw()
                with run.Template(settings) as template:
                    for strategy in conf.strategies:
                        progress.label = f"utilisation {level:.2f}, seed {seed}: {strategy}"
                        result = run.run(template, strategy, progress.step)
                        results.append(result)
                        rows.append(report.figures(result))
                        if result.drain is not None:
                            drain_rows.append(report.drain_figures(result))
    finally:
        progress.close()
    elapsed = time.monotonic() - started
    summary = report.summary(rows)

    print(
        f"{PROG}: {base.hosts} hosts (VCPU 16, 64 GiB, 640 GB each), {base.resizes} resizes "
        f"per run by {base.workers} workers, revert ratio {base.revert_ratio}, seeds "
        f"{seeds[0]}-{seeds[-1]}; {elapsed:.0f} s"
    )
    if drain_rows:
        print(report.drain_table(drain_rows))
        print(report.DRAIN_LEGEND)
        print()
    if conf.per_run:
        print(report.table(rows))
        print(report.LEGEND)
        print()
    print(report.summary_table(summary))
    print(report.SUMMARY_LEGEND)
    if conf.json:
        document = {
            "command": [PROG, *(sys.argv[1:] if argv is None else argv)],
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "python_hash_seed": os.environ.get("PYTHONHASHSEED"),
            "elapsed_s": round(elapsed, 1),
            "figures": rows,
            **({"drain_figures": drain_rows} if drain_rows else {}),
            "summary": summary,
            "runs": [result.to_json() for result in results],
        }
        with open(conf.json, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1, sort_keys=True)
        print(f"Figures written to {conf.json}")
    if conf.plots_dir:
        for path in report.plot(rows, conf.plots_dir):
            print(f"Plot written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
