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


HEADER = (
    f"{'util':>5} {'strategy':<17} {'resizes':>7} {'ok':>4} {'feasible':>8} "
    f"{'ok/feas':>8} {'alone':>7} {'bug ok':>7} {'races':>6} {'VERIFY extra':>22} {'host%':>6} "
    f"{'rev.ref':>7} {'restore':>8} {'heal':>9} {'req':>5}"
)


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The figures as a readable table, one line per utilisation and strategy."""
    lines = [HEADER, "-" * len(HEADER)]
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
            f"{f['utilisation']:>5.2f} {f['strategy']:<17} {f['resizes']:>7} "
            f"{f['succeeded']:>4} {f['oracle_feasible']:>8} "
            f"{(f'{pct:.1f}%' if pct is not None else '-'):>8} "
            f"{f['uncontended_feasible_succeeded']:>3}/{f['uncontended_feasible']:<3} "
            f"{f['same_host_full_succeeded']:>3}/{f['same_host_full']:<3} "
            f"{f['lost_races']:>2}/{f['won_races']:<3} {held:>22} "
            f"{f['verify_extra_host_pct']:>6.2f} "
            f"{f['reverts_refused']:>3}/{f['reverts']:<3} {f['restores_refused']:>8} "
            f"{heal:>9} {f['requests_per_resize']:>5.2f}"
        )
    return "\n".join(lines)


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

    :raises PlotsUnavailable: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError as exc:
        raise PlotsUnavailable() from exc
    strategies = list(dict.fromkeys(f["strategy"] for f in rows))
    paths = []

    figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    for strategy in strategies:
        mine = sorted(
            (f for f in rows if f["strategy"] == strategy), key=lambda f: f["utilisation"]
        )
        axes.plot(
            [100 * f["start_utilisation"] for f in mine],
            [f["success_of_feasible_pct"] for f in mine],
            marker="o",
            label=strategy,
        )
    axes.set_xlabel("cluster utilisation at start (% of the most used class)")
    axes.set_ylabel("oracle-feasible resizes that succeeded (%)")
    axes.set_title("Resize success against utilisation")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    paths.append(f"{directory}/simulation-success.png")
    figure.savefig(paths[-1])
    pyplot.close(figure)

    top = max(f["utilisation"] for f in rows)
    at_top = [f for f in rows if f["utilisation"] == top]
    figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    width = 0.8 / len(CLASSES)
    for i, rc in enumerate(CLASSES):
        axes.bar(
            [n + (i - 1) * width for n in range(len(at_top))],
            [100 * f["verify_extra_mean"][rc] / cluster.HOST[rc] for f in at_top],
            width,
            label=rc,
        )
    axes.set_xticks(range(len(at_top)), [f["strategy"] for f in at_top])
    axes.set_ylabel("held beyond the running flavor (% of a host)")
    axes.set_title(f"Capacity held per VERIFY_RESIZE window (utilisation {top:.2f})")
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    paths.append(f"{directory}/simulation-verify-held.png")
    figure.savefig(paths[-1])
    pyplot.close(figure)
    return paths
