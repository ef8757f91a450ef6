"""What a simulation run reports: figures per strategy, the table, JSON, plots.

Every figure is a count or a ratio of counts over the outcomes of one
strategy's run (no timing), so the same settings and seed give the same
figures. The plots need matplotlib (the ``simulate`` extra); nothing else
here does.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from resize_sched import resources as rs
from resize_sched.simulate import cluster
from resize_sched.simulate.run import RunResult

CLASSES = (rs.VCPU, rs.MEMORY_MB, rs.DISK_GB)

EXTRA = "simulate"


class PlotsUnavailable(Exception):
    """matplotlib is not installed."""

    def __str__(self) -> str:
        return (
            "the plots need matplotlib: install the 'simulate' extra "
            f"(pip install 'resize_sched[{EXTRA}]'), or leave out --plots-dir"
        )


def _share(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None


def figures(result: RunResult) -> dict[str, Any]:
    """The counts and ratios of one strategy's run (see ``doc/simulation.rst``)."""
    o = result.outcomes
    ok = [x for x in o if x.succeeded]
    feasible = [x for x in o if x.feasible]
    uncontended = [x for x in feasible if not x.contended]
    full = [x for x in o if x.same_host_full]
    windows = len(ok)
    extra = {
        rc: round(sum(x.extra_held.get(rc, 0) for x in ok) / windows, 2) if windows else 0.0
        for rc in CLASSES
    }
    host_share = (
        statistics.fmean(
            statistics.fmean(x.extra_held.get(rc, 0) / cluster.HOST[rc] for rc in CLASSES)
            for x in ok
        )
        if ok
        else 0.0
    )
    reverts = [x for x in o if x.decision == "revert"]
    confirms = [x for x in o if x.decision == "confirm" or x.revert_refused]
    healed = [n for n in result.heals.values() if n is not None]
    return {
        "strategy": result.strategy,
        "utilisation": result.settings.utilisation,
        "seed": result.settings.seed,
        "start_utilisation": round(result.start_utilisation, 3),
        "hosts": result.hosts,
        "servers": result.servers,
        "resizes": len(o),
        "succeeded": len(ok),
        "oracle_feasible": len(feasible),
        "feasible_succeeded": sum(x.succeeded for x in feasible),
        "success_of_feasible_pct": _share(sum(x.succeeded for x in feasible), len(feasible)),
        "uncontended_feasible": len(uncontended),
        "uncontended_feasible_succeeded": sum(x.succeeded for x in uncontended),
        "lost_races": sum(not x.succeeded and x.contended for x in feasible),
        "won_races": sum(x.succeeded and not x.feasible for x in o),
        "same_host_full": len(full),
        "same_host_full_succeeded": sum(x.succeeded for x in full),
        "same_host": sum(bool(x.same_host) for x in ok),
        "verify_windows": windows,
        "verify_extra_mean": extra,
        "verify_extra_host_pct": round(100.0 * host_share, 2),
        "reverts": len(reverts),
        "reverts_refused": sum(x.revert_refused for x in reverts),
        "restores_refused": len(result.heals),
        "healed": len(healed),
        "heal_arrivals": sorted(healed),
        "unhealed": len(result.heals) - len(healed),
        "failures": {
            kind: sum(x.result == kind for x in o)
            for kind in sorted({x.result for x in o if not x.succeeded})
        },
        "errors": sum(x.result.startswith("error") for x in o),
        "requests_per_resize": round(statistics.fmean(x.schedule_requests for x in o), 2)
        if o
        else None,
        "requests_per_confirm": _mean([x.decision_requests for x in confirms]),
        "requests_per_revert": _mean(
            [x.decision_requests for x in reverts if not x.revert_refused]
        ),
    }


def _mean(values: Sequence[int]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


#: The columns that name a run, first in the per-run tables.
RUN_HEADER = f"{'util':>5} {'seed':>4} {'strategy':<17} "


def _run(f: dict[str, Any]) -> str:
    """The run's name under :data:`RUN_HEADER`."""
    return f"{f['utilisation']:>5.2f} {f['seed']:>4} {f['strategy']:<17} "


def _pct(pct: float | None) -> str:
    return f"{pct:.1f}%" if pct is not None else "-"


def _table(header: str, lines: Sequence[str]) -> str:
    """``header``, a rule as wide, then ``lines``."""
    return "\n".join([header, "-" * len(header), *lines])


HEADER = (
    f"{RUN_HEADER}{'resizes':>7} {'ok':>4} {'feasible':>8} "
    f"{'ok/feas':>8} {'alone':>7} {'bug ok':>7} {'races':>6} {'VERIFY extra':>22} {'host%':>6} "
    f"{'rev.ref':>7} {'restore':>8} {'heal':>9} {'req':>5}"
)


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The figures as a readable table, one line per run (utilisation, seed, strategy)."""
    lines = []
    for f in rows:
        extra = f["verify_extra_mean"]
        held = f"{extra[rs.VCPU]:.2f}/{extra[rs.MEMORY_MB] / 1024:.2f}/{extra[rs.DISK_GB]:.1f}"
        pct = f["success_of_feasible_pct"]
        heal = (
            f"{f['healed']}/{f['restores_refused']}"
            + (f" ~{max(f['heal_arrivals'])}" if f["heal_arrivals"] else "")
            if f["restores_refused"]
            else "-"
        )
        lines.append(
            f"{_run(f)}{f['resizes']:>7} "
            f"{f['succeeded']:>4} {f['oracle_feasible']:>8} {_pct(pct):>8} "
            f"{f['uncontended_feasible_succeeded']:>3}/{f['uncontended_feasible']:<3} "
            f"{f['same_host_full_succeeded']:>3}/{f['same_host_full']:<3} "
            f"{f['lost_races']:>2}/{f['won_races']:<3} {held:>22} "
            f"{f['verify_extra_host_pct']:>6.2f} "
            f"{f['reverts_refused']:>3}/{f['reverts']:<3} {f['restores_refused']:>8} "
            f"{heal:>9} {f['requests_per_resize']:>5.2f}"
        )
    return _table(HEADER, lines)


def summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs of each utilisation and strategy over their seeds, in ``rows``' order.

    Counts are summed over the seeds; the shares (``ok/feas``, ``host%``,
    requests) are the mean of each seed's, with their least and greatest
    (the spread the plots show).
    """
    groups: dict[tuple[float, str], list[dict[str, Any]]] = {}
    for f in rows:
        groups.setdefault((f["utilisation"], f["strategy"]), []).append(f)
    out = []
    for (level, strategy), runs in groups.items():
        shares = [f["success_of_feasible_pct"] for f in runs]
        shares = [x for x in shares if x is not None]
        held = [f["verify_extra_host_pct"] for f in runs]
        entry: dict[str, Any] = {
            "utilisation": level,
            "strategy": strategy,
            "seeds": [f["seed"] for f in runs],
            "start_utilisation": round(statistics.fmean(f["start_utilisation"] for f in runs), 3),
        }
        for key in (
            "resizes",
            "succeeded",
            "oracle_feasible",
            "feasible_succeeded",
            "same_host_full",
            "same_host_full_succeeded",
            "lost_races",
            "won_races",
            "reverts",
            "reverts_refused",
            "restores_refused",
            "healed",
        ):
            entry[key] = sum(f[key] for f in runs)
        entry["success_of_feasible_pct"] = _spread(shares)
        entry["verify_extra_host_pct"] = _spread(held)
        entry["verify_extra_mean"] = {
            rc: round(statistics.fmean(f["verify_extra_mean"][rc] for f in runs), 2)
            for rc in CLASSES
        }
        entry["verify_extra_host_pct_by_class"] = {
            rc: _spread([100 * f["verify_extra_mean"][rc] / cluster.HOST[rc] for f in runs])
            for rc in CLASSES
        }
        requests = [f["requests_per_resize"] for f in runs if f["requests_per_resize"] is not None]
        entry["requests_per_resize"] = round(statistics.fmean(requests), 2) if requests else None
        out.append(entry)
    return out


def _spread(values: Sequence[float]) -> dict[str, float] | None:
    """Mean, least and greatest of ``values`` (None when there are none)."""
    if not values:
        return None
    return {
        "mean": round(statistics.fmean(values), 1),
        "min": round(min(values), 1),
        "max": round(max(values), 1),
    }


SUMMARY_HEADER = (
    f"{'util':>5} {'strategy':<17} {'seeds':>5} {'resizes':>7} {'ok':>4} {'feasible':>8} "
    f"{'ok/feas (min-max)':>19} {'bug ok':>7} {'races':>7} {'host%':>5} {'rev.ref':>7} "
    f"{'restore':>7} {'heal':>4} {'req':>5}"
)


def summary_table(entries: Sequence[dict[str, Any]]) -> str:
    """:func:`summary` as a table, one line per utilisation and strategy."""
    lines = []
    for e in entries:
        share = e["success_of_feasible_pct"]
        spread = f"{share['mean']:.1f}% ({share['min']:.0f}-{share['max']:.0f})" if share else "-"
        held = e["verify_extra_host_pct"]
        req = e["requests_per_resize"]
        lines.append(
            f"{e['utilisation']:>5.2f} {e['strategy']:<17} {len(e['seeds']):>5} "
            f"{e['resizes']:>7} {e['succeeded']:>4} {e['oracle_feasible']:>8} {spread:>19} "
            f"{e['same_host_full_succeeded']:>3}/{e['same_host_full']:<3} "
            f"{e['lost_races']:>3}/{e['won_races']:<3} "
            f"{(held['mean'] if held else 0.0):>5.1f} "
            f"{e['reverts_refused']:>3}/{e['reverts']:<3} {e['restores_refused']:>7} "
            f"{e['healed']:>4} {(f'{req:.2f}' if req is not None else '-'):>5}"
        )
    return _table(SUMMARY_HEADER, lines)


SUMMARY_LEGEND = """\
Summed over the seeds of each line: resizes, ok, feasible, bug ok, races, rev.ref,
restore, heal (as in the per-run table, --per-run). ok/feas: the mean over the seeds of
the share of the oracle-feasible resizes that succeeded, (least-greatest); host%: the
mean share of a host held beyond the running flavor per VERIFY_RESIZE window; req: the
mean Placement requests per resize."""


LEGEND = """\
ok/feas: share of the oracle-feasible resizes that succeeded; alone: of those no other
worker wrote against between snapshot and claim, how many succeeded. bug ok: same-host-full
cases (Nova bug 1790204: only the room the server leaves makes it fit) that succeeded,
of those met. races: oracle-feasible resizes lost to a concurrent write / resizes that
succeeded though infeasible at their snapshot (room freed meanwhile). VERIFY extra:
held beyond the running flavor per VERIFY_RESIZE window, VCPU/GiB RAM/GB disk; host%:
the same as a share of one host. rev.ref: reverts refused / asked. restore: restores
refused (server flagged needs_heal); heal: healed by the sweep / flagged, ~ the most
arrivals it took. req: Placement requests per resize (schedule and claim)."""


def plot(rows: Sequence[dict[str, Any]], directory: str) -> list[str]:
    """Write the two PNGs into ``directory``; return their paths.

    The success plot has one point per utilisation and strategy, the mean
    over the seeds, and a band from the least to the greatest seed's share;
    its axis runs from 0 to 100 %. The held plot's bars are the means at the
    highest utilisation, with the least and greatest seed's as error bars.

    :raises PlotsUnavailable: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError as exc:
        raise PlotsUnavailable() from exc
    entries = summary(rows)
    strategies = list(dict.fromkeys(e["strategy"] for e in entries))
    seeds = max(len(e["seeds"]) for e in entries)
    paths = []

    figure, axes = pyplot.subplots(figsize=(6.4, 4.2), dpi=100)
    for strategy in strategies:
        mine = sorted(
            (e for e in entries if e["strategy"] == strategy and e["success_of_feasible_pct"]),
            key=lambda e: e["utilisation"],
        )
        x = [100 * e["start_utilisation"] for e in mine]
        (line,) = axes.plot(
            x, [e["success_of_feasible_pct"]["mean"] for e in mine], marker="o", label=strategy
        )
        axes.fill_between(
            x,
            [e["success_of_feasible_pct"]["min"] for e in mine],
            [e["success_of_feasible_pct"]["max"] for e in mine],
            color=line.get_color(),
            alpha=0.15,
            linewidth=0,
        )
    axes.set_ylim(0, 102)
    axes.set_xlabel("cluster utilisation at start (% of the most used class)")
    axes.set_ylabel("oracle-feasible resizes that succeeded (%)")
    axes.set_title(
        f"Resize success against utilisation (mean of {seeds} seed(s), band: least to greatest)",
        fontsize="medium",
    )
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower left")
    figure.tight_layout()
    paths.append(f"{directory}/simulation-success.png")
    figure.savefig(paths[-1])
    pyplot.close(figure)

    top = max(e["utilisation"] for e in entries)
    at_top = [e for e in entries if e["utilisation"] == top]
    figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    width = 0.8 / len(CLASSES)
    for i, rc in enumerate(CLASSES):
        spreads = [e["verify_extra_host_pct_by_class"][rc] for e in at_top]
        means = [s["mean"] for s in spreads]
        axes.bar(
            [n + (i - 1) * width for n in range(len(at_top))],
            means,
            width,
            yerr=[
                [m - s["min"] for m, s in zip(means, spreads)],
                [s["max"] - m for m, s in zip(means, spreads)],
            ],
            capsize=3,
            label=rc,
        )
    axes.set_xticks(range(len(at_top)), [e["strategy"] for e in at_top])
    axes.set_ylim(bottom=0)
    axes.set_ylabel("held beyond the running flavor (% of a host)")
    axes.set_title(
        f"Capacity held per VERIFY_RESIZE window (utilisation {top:.2f}, {seeds} seed(s))",
        fontsize="medium",
    )
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    paths.append(f"{directory}/simulation-verify-held.png")
    figure.savefig(paths[-1])
    pyplot.close(figure)
    return paths


def drain_figures(result: RunResult) -> dict[str, Any]:
    """The counts of one run of the drain workload: its moves, what the
    drained hosts held at the end, and the concurrent resizes' :func:`figures`.

    ``moves = moved + no_room + restores_refused + errors``; ``missed``
    counts the moves the oracle said fit that did not succeed.
    """
    drain = result.drain
    moves = drain.moves
    return {
        "strategy": result.strategy,
        "utilisation": result.settings.utilisation,
        "seed": result.settings.seed,
        "drained_hosts": list(drain.hosts),
        "moves": len(moves),
        "moved": sum(m.succeeded for m in moves),
        "no_room": sum(m.no_room for m in moves),
        "rescheduled": sum(m.rescheduled for m in moves),
        "restores_refused": sum(m.result == "restore refused" for m in moves),
        "errors": sum(m.result.startswith("error") for m in moves),
        "oracle_fits": sum(m.fits for m in moves),
        "missed": sum(m.fits and not m.succeeded for m in moves),
        "won": sum(m.succeeded and not m.fits for m in moves),
        "servers_left": sum(drain.left.values()),
        "usage_left": {
            rc: sum(usage.get(rc, 0) for usage in drain.usage.values()) for rc in CLASSES
        },
        "resizes": figures(result),
    }


DRAIN_HEADER = (
    f"{RUN_HEADER}{'moves':>5} {'moved':>5} {'no room':>7} "
    f"{'resched':>7} {'fits':>4} {'missed':>6} {'left (VCPU/GiB/GB)':>19} "
    f"{'resizes':>7} {'ok':>4} {'ok/feas':>8} {'races':>6}"
)


def drain_table(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`drain_figures` as a table, one line per run."""
    lines = []
    for f in rows:
        left = f["usage_left"]
        held = f"{left[rs.VCPU]}/{left[rs.MEMORY_MB] // 1024}/{left[rs.DISK_GB]}"
        r = f["resizes"]
        pct = r["success_of_feasible_pct"]
        lines.append(
            f"{_run(f)}{f['moves']:>5} "
            f"{f['moved']:>5} {f['no_room']:>7} {f['rescheduled']:>7} {f['oracle_fits']:>4} "
            f"{f['missed']:>6} {held:>19} {r['resizes']:>7} {r['succeeded']:>4} "
            f"{_pct(pct):>8} {r['lost_races']:>2}/{r['won_races']:<3}"
        )
    return _table(DRAIN_HEADER, lines)


DRAIN_LEGEND = """\
moves: servers of the drained host(s) cold-migrated off; moved: those that succeeded;
no room: refused by the scheduler (NoValidHost); resched: moves whose first claim was
refused and an alternate took them; fits: moves the oracle said an enabled host had room
for at their first turn; missed: of those, moves that failed. left: what the drained
host(s) still hold in Placement at the end (0/0/0 once every move succeeded). resizes,
ok, ok/feas, races: the concurrent resizes, as in the resize workload's table."""
