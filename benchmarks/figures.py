"""The figures of one benchmark run, and their summary for ``--json``."""

from __future__ import annotations

import collections
import statistics
from dataclasses import dataclass, field
from typing import Any

from external_placement import LogSummary
from floor import FloorFigures

from resize_sched import resources as rs


@dataclass
class Consistency:
    """Placement's usages against what the servers should hold, after a run."""

    hosts_checked: int = 0
    #: host name -> (expected usage, Placement's usage)
    differ: dict[str, tuple[rs.Resources, rs.Resources]] = field(default_factory=dict)
    #: per differing host: consumer -> what it holds there
    holders: dict[str, dict[str, rs.Resources]] = field(default_factory=dict)
    #: host name -> class -> (usage, capacity), where usage > capacity
    over_capacity: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict)
    not_active: list[str] = field(default_factory=list)
    needs_heal: list[str] = field(default_factory=list)
    in_flight: list[str] = field(default_factory=list)
    #: problems an earlier run on the same cloud left, not counted above
    carried_over: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def violations(self) -> int:
        """Every host or server that is not as it should be."""
        return (
            len(self.differ)
            + len(self.over_capacity)
            + len(self.not_active)
            + len(self.needs_heal)
            + len(self.in_flight)
        )


@dataclass
class Figures:
    """One configuration's figures: a strategy, prefer_same_host, workers, hosts."""

    strategy: str
    prefer_same_host: bool = False
    workers: int = 1
    hosts: int = 0
    #: [filter_scheduler] host_subset_size of the run (None: the option's default)
    subset: int | None = None
    schedule_rt: list[int] = field(default_factory=list)
    confirm_rt: list[int] = field(default_factory=list)
    revert_rt: list[int] = field(default_factory=list)
    #: schedule+claim of every resize that found a host (ms)
    latency_ms: list[float] = field(default_factory=list)
    #: of which inside Placement requests, and the rest (ours), per resize
    placement_ms: list[float] = field(default_factory=list)
    own_ms: list[float] = field(default_factory=list)
    #: with one worker only: of ours, with a transaction of our database open
    #: (wall time), the rest of ours (clamped at 0), and the transactions
    db_ms: list[float] = field(default_factory=list)
    own_outside_db_ms: list[float] = field(default_factory=list)
    db_transactions: list[int] = field(default_factory=list)
    #: of those transactions, the ones that write (commits), and the SQL
    #: statements sent in all of them
    db_commits: list[int] = field(default_factory=list)
    db_statements: list[int] = field(default_factory=list)
    #: schedule+claim of the resizes that stayed on their host
    in_place_ms: list[float] = field(default_factory=list)
    #: the first schedule of a fresh scheduler (not in the lists above)
    first_rt: int | None = None
    first_ms: float | None = None
    same_host: int = 0
    no_host: int = 0
    cycles: int = 0
    completed: int = 0
    failed_cycles: int = 0
    #: exception class name -> how many times a cycle step raised it
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    error_examples: dict[str, str] = field(default_factory=dict)
    #: refused allocation writes (PUT/POST /allocations), by exception class
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    refused_examples: dict[str, str] = field(default_factory=dict)
    #: resizes that fit nowhere: requests, ms, of which in Placement
    failure_rt: list[int] = field(default_factory=list)
    failure_ms: list[float] = field(default_factory=list)
    failure_placement_ms: list[float] = field(default_factory=list)
    failure_kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    floor: FloorFigures = field(default_factory=FloorFigures)
    placement_log: LogSummary | None = None
    elapsed_s: float = 0.0
    peak_mib: float | None = None
    consistency: Consistency | None = None
    #: host provider uuids the resizes touched (sources and destinations)
    touched: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        return (
            self.strategy
            + (" +psh" if self.prefer_same_host else "")
            + (f" subset {self.subset}" if self.subset is not None else "")
        )

    def error(self, exc: BaseException, step: str) -> None:
        name = type(exc).__name__
        self.errors[name] += 1
        self.error_examples.setdefault(name, f"{step}: {_one_line(exc)}")

    def refusal(self, exc: BaseException) -> None:
        name = type(exc).__name__
        self.refused[name] += 1
        self.refused_examples.setdefault(name, _one_line(exc))

    def merge(self, other: Figures) -> None:
        """Add another worker's figures to these."""
        for name in (
            "schedule_rt",
            "confirm_rt",
            "revert_rt",
            "latency_ms",
            "placement_ms",
            "own_ms",
            "db_ms",
            "own_outside_db_ms",
            "db_transactions",
            "db_commits",
            "db_statements",
            "in_place_ms",
        ):
            getattr(self, name).extend(getattr(other, name))
        for name in ("same_host", "no_host", "cycles", "completed", "failed_cycles"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.update(other.errors)
        for name, example in other.error_examples.items():
            self.error_examples.setdefault(name, example)
        self.refused.update(other.refused)
        for name, example in other.refused_examples.items():
            self.refused_examples.setdefault(name, example)
        self.touched |= other.touched

    # -- derived figures --------------------------------------------------------------

    @property
    def capacity_refusals(self) -> int:
        return self.refused["ClaimRefused"]

    @property
    def generation_conflicts(self) -> int:
        return self.refused["ConsumerGenerationConflict"]

    def ratio(self) -> float:
        floor = _percentile(self.floor.total_ms, 50)
        return _percentile(self.latency_ms, 50) / floor if floor else float("nan")

    def to_json(self) -> dict[str, Any]:
        """Every figure, summarised (percentiles, means), for ``--json``."""
        c = self.consistency
        return {
            "strategy": self.strategy,
            "prefer_same_host": self.prefer_same_host,
            "workers": self.workers,
            "hosts": self.hosts,
            "host_subset_size": self.subset,
            "requests": {
                "schedule_to_claim_mean": _mean_or_none(self.schedule_rt),
                "schedule_to_claim_max": max(self.schedule_rt, default=None),
                "confirm_mean": _mean_or_none(self.confirm_rt),
                "revert_mean": _mean_or_none(self.revert_rt),
                "first_schedule": self.first_rt,
            },
            "schedule_claim_ms": _stats(self.latency_ms),
            "placement_ms": _stats(self.placement_ms),
            "own_ms": _stats(self.own_ms),
            "db_ms": _stats(self.db_ms),
            "own_outside_db_ms": _stats(self.own_outside_db_ms),
            "db_transactions": {
                "schedule_to_claim_mean": _mean_or_none(self.db_transactions),
                "schedule_to_claim_max": max(self.db_transactions, default=None),
                "commits_mean": _mean_or_none(self.db_commits),
                "statements_mean": _mean_or_none(self.db_statements),
            },
            "in_place_ms": _stats(self.in_place_ms),
            "first_schedule_ms": self.first_ms,
            "floor": {
                "total_ms": _stats(self.floor.total_ms),
                "query_ms": _stats(self.floor.query_ms),
                "claim_ms": _stats(self.floor.claim_ms),
                "empty_query_ms": _stats(self.floor.empty_query_ms),
                "candidates": self.floor.candidates,
            },
            "ratio_p50_to_floor_p50": _finite(self.ratio()),
            "failure": {
                "requests": _stats(self.failure_rt),
                "ms": _stats(self.failure_ms),
                "placement_ms": _stats(self.failure_placement_ms),
                "kinds": dict(self.failure_kinds),
            },
            "same_host": self.same_host,
            "no_host": self.no_host,
            "cycles": self.cycles,
            "completed": self.completed,
            "failed_cycles": self.failed_cycles,
            "resizes_per_s": _finite(self.cycles / self.elapsed_s) if self.elapsed_s else None,
            "elapsed_s": self.elapsed_s,
            "errors": dict(self.errors),
            "error_examples": self.error_examples,
            "refused": dict(self.refused),
            "capacity_refusals_per_resize": _per(self.capacity_refusals, self.cycles),
            "generation_conflicts_per_resize": _per(self.generation_conflicts, self.cycles),
            "placement_log": (
                {
                    "answers": dict(self.placement_log.answers),
                    "over_capacity_accepted": self.placement_log.over_capacity_accepted,
                }
                if self.placement_log
                else None
            ),
            "peak_mib": self.peak_mib,
            "consistency": (
                {
                    "hosts_checked": c.hosts_checked,
                    "violations": c.violations,
                    "carried_over": c.carried_over,
                    "differ": sorted(c.differ),
                    "over_capacity": sorted(c.over_capacity),
                    "not_active": c.not_active,
                    "needs_heal": c.needs_heal,
                    "in_flight": c.in_flight,
                }
                if c
                else None
            ),
        }


@dataclass
class MoveFigures:
    """One strategy's cold migrations, live migrations and evacuations
    (``moves.py``): the Placement requests of each phase, counted by the
    client as the resize cycles' are."""

    strategy: str
    #: (move, phase) -> the requests of each time the phase ran
    requests: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    moves: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    error_examples: dict[str, str] = field(default_factory=dict)
    consistency: Consistency | None = None
    elapsed_s: float = 0.0

    def error(self, exc: BaseException, step: str) -> None:
        name = type(exc).__name__
        self.errors[name] += 1
        self.error_examples.setdefault(name, f"{step}: {_one_line(exc)}")

    def mean(self, key: tuple[str, str]) -> float | None:
        return _mean_or_none(self.requests.get(key, []))

    def to_json(self) -> dict[str, Any]:
        c = self.consistency
        return {
            "strategy": self.strategy,
            "moves": self.moves,
            "requests": {
                f"{move}: {phase}": {
                    "mean": _mean_or_none(values),
                    "max": max(values, default=None),
                    "n": len(values),
                }
                for (move, phase), values in self.requests.items()
            },
            "elapsed_s": round(self.elapsed_s, 2),
            "errors": dict(self.errors),
            "error_examples": self.error_examples,
            "consistency": (
                {"hosts_checked": c.hosts_checked, "violations": c.violations} if c else None
            ),
        }


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def _finite(value: float) -> float | None:
    return None if value != value else round(value, 3)  # NaN -> None


def _stats(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": _finite(_percentile(values, 50)),
        "p95": _finite(_percentile(values, 95)),
        "p99": _finite(_percentile(values, 99)),
        "mean": _finite(statistics.mean(values)),
        "max": _finite(max(values)),
    }


def _mean_or_none(values: list[int]) -> float | None:
    return round(statistics.mean(values), 3) if values else None


def _per(count: int, cycles: int) -> float | None:
    return round(count / cycles, 3) if cycles else None
