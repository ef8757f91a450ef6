"""The soak's report: what the daemons' logs tell, and the printed figures.

:func:`from_logs` reads each daemon's log for what is there to read but not
judged (tracebacks, RPC handlers that ended in an exception, what the sweep's
reaper gave back); :func:`print_report` prints a run's figures as
``doc/chaos-soak.rst`` describes them.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Mapping
from typing import Any

#: The outcomes of an operation, in the order the table shows them.
OUTCOME_COLUMNS = ("ok", "refused", "failed", "timeout", "unfinished", "error", "interrupted")
#: What the conductor logs when a handler ends in an exception it did not expect.
_UNEXPECTED = re.compile(r"Exception during message handling: ([\w.]+)")
#: What the sweep's reaper logs when it gives back what a late write left.
_REAPED = re.compile(r"Reaper gave back what (\d+) consumer")


def _read(daemon: Any) -> str:
    try:
        return daemon.log_path.read_text(errors="replace")
    except OSError:
        return ""


def from_logs(daemons: Mapping[str, Any]) -> dict[str, Any]:
    """What the daemons logged, for the figures.

    :param daemons: name -> :class:`~tests.chaos.stack.Daemon`.
    :returns: ``tracebacks`` (per daemon), ``unexpected_exceptions`` (``daemon:
        type`` -> count) and ``reaped`` (consumers the reaper gave back).
    """
    tracebacks: dict[str, int] = {}
    unexpected: collections.Counter[str] = collections.Counter()
    reaped = 0
    for name, daemon in daemons.items():
        text = _read(daemon)
        tracebacks[name] = text.count("Traceback")
        unexpected.update(f"{name}: {m[1]}" for m in _UNEXPECTED.finditer(text))
        if name == "conductor":
            reaped = sum(int(m[1]) for m in _REAPED.finditer(text))
    return {
        "tracebacks": tracebacks,
        "unexpected_exceptions": dict(unexpected),
        "reaped": reaped,
    }


def print_report(figures: dict[str, Any]) -> None:
    """Print a run's figures (see doc/chaos-soak.rst, "Reading the output")."""
    print()
    print(
        f"chaos soak: seed {figures['seed']}, strategy {figures['strategy']}, "
        f"{figures['clients']} clients, {figures['computes']} computes, "
        f"{figures['duration_s']:.0f} s of chaos, moves: "
        f"{', '.join(figures.get('moves', [])) or 'none'}"
    )
    print(f"\noperations ({figures['operations_total']}):")
    print(f"  {'':13}" + "".join(f"{c:>12}" for c in OUTCOME_COLUMNS))
    for op, row in figures["operations"].items():
        print(f"  {op:13}" + "".join(f"{row[c]:>12}" for c in OUTCOME_COLUMNS))
    during = figures["deletes_during"]
    print(
        "deletes accepted, by what they interrupted: "
        + (", ".join(f"{k} {v}" for k, v in sorted(during.items())) or "none")
    )
    faults = figures["faults"]
    print(
        f"\nPlacement faults injected ({sum(faults.values())} of "
        f"{figures['placement_requests']} requests): "
        + ", ".join(f"{k} {v}" for k, v in faults.items())
    )
    kills = figures["kills"]
    print(
        f"SIGKILLs ({sum(kills.values())}): "
        + (", ".join(f"{k} {v}" for k, v in kills.items()) or "none")
    )
    if figures["restarts_after_exit"]:
        print(
            "computes restarted after exiting on their own (Placement unreachable at "
            "start): " + ", ".join(f"{k} {v}" for k, v in figures["restarts_after_exit"].items())
        )
    if figures["api_5xx"]:
        print(f"API 5xx answers ({len(figures['api_5xx'])}):")
        for line in figures["api_5xx"][:10]:
            print(f"  {line}")
    print("tracebacks logged: " + ", ".join(f"{k} {v}" for k, v in figures["tracebacks"].items()))
    for what, n in sorted(figures["unexpected_exceptions"].items()):
        print(f"  handler ended in {what}: {n}")
    print(f"consumers the sweep's reaper gave back (late writes): {figures['reaped']}")
    print("timings: " + ", ".join(f"{k} {v} s" for k, v in figures["timings_s"].items()))
    if figures["notes"]:
        print(f"\nnotes (not violations): {len(figures['notes'])}")
        for v in figures["notes"]:
            print(f"  [{v['kind']}] {v['detail']}")
    print(f"\nviolations: {len(figures['violations'])}")
    for v in figures["violations"]:
        print(f"  [{v['kind']}] {v['detail']}")
