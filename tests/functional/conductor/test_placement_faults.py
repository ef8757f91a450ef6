"""Placement failing at every call of a resize, a confirm and a revert.

A :class:`~tests.functional.fixtures.fault_proxy.FaultProxy` sits between the
conductor and the real Placement (served over HTTP). A resize is played
message by message through the conductor's RPC endpoints
(:class:`~tests.functional.fixtures.flows.FlowRun`), once without a fault to
count its Placement requests, then once per request number ``N`` and fault,
with the fault injected at ``N``:

* ``500``, ``503``, a connection reset, an answer held back past the client's
  time-out (the write lands; the client does not know), and a generation
  conflict (``409 placement.concurrent_update``, at writes only);
* once; twice in a row (a 503's retry, a 500's next request); and on every
  attempt, using up the client's retries (``connect_retries``,
  ``status_code_retries``) or the executor's ``generation_conflict_retries``.

The invariants are checked right after the message that met the fault, and
again at the end. Whatever happened, once the flow has been played (the compute hosts answer
whatever was sent to them, a user retries a confirm or revert that was
refused, and the conductor's sweep runs) the resize must have ended:
confirmed, reverted, or failed with the server restored on its source. The
invariants of doc/design.rst hold, every host's usage is exactly what its
live servers' flavors add up to, what the database records a migration
holds is what Placement holds, no journal entry is left ``intended``, and a
server flagged ``needs_heal`` is healed by the sweep.

The figures (cells, faults injected, violations) are printed (``-s``) and
appended to ``placement_faults.jsonl`` in the temporary directory.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import sqlalchemy as sa

from resize_sched import actions, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import recovery
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import admin_context
from resize_sched.db import models
from resize_sched.db.api import Database
from resize_sched.placement.embedded import PlacementEndpoint
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.database import fresh_sqlite_database, sqlite_url
from tests.functional.fixtures.fault_proxy import FaultProxy
from tests.functional.fixtures.flows import PLACES, STRATEGIES, FlowRun, Recorder
from tests.functional.fixtures.placement import PlacementHTTP

#: ``[placement] timeout`` of the conductor's client in cells with a ``delay``
#: fault (seconds): the client gives up on the delayed answer after this long.
TIMEOUT = 0.5
#: ... and in every other cell: long enough that a loaded machine never
#: times a request out, so the requests are numbered the same in each run.
PATIENT_TIMEOUT = 30.0
#: ... and in the regression tests, which need the requests numbered exactly
#: as without faults up to the one planned.
SURE_TIMEOUT = 2.5
#: How much longer than the client's time-out a ``delay`` fault holds an
#: answer back.
PAST_TIMEOUT = 0.3
#: keystoneauth's attempts per request: the first and ``connect_retries``
#: (= ``status_code_retries``) more, as configured in resize_sched/conf/placement.py.
ATTEMPTS = 4
#: The executor's attempts per write: the first and ``generation_conflict_retries``.
WRITE_ATTEMPTS = 4
#: Requests between two attempts of one executor write after a 409 (the write,
#: then the re-read of both consumers).
WRITE_STRIDE = 3

ENDED = ("confirmed", "reverted", "error")
SUMMARY = os.path.join(tempfile.gettempdir(), "placement_faults.jsonl")


class Proxied(PlacementEndpoint):
    """A Placement reached through a fault proxy; hosts are made directly."""

    def __init__(self, real: PlacementHTTP, proxy: FaultProxy, **options: Any) -> None:
        self.real = real
        self.endpoint = proxy.endpoint
        self.options = options

    def configure(self, conf: Any, **overrides: Any) -> Any:
        return super().configure(conf, **{**self.options, **overrides})

    def add_host(self, *args: Any, **kwargs: Any) -> str:
        return self.real.add_host(*args, **kwargs)


#: Where the databases of each cell go: memory when the system has it
#: (Placement's allocation writes are several times faster without fsync).
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None


@dataclass(frozen=True)
class Template:
    """A deployment set up once (hosts, flavors, servers), copied for each cell."""

    strategy: str
    place: str
    directory: str
    hosts: dict[str, str]
    server_uuid: str
    new_flavorid: str


_TEMPLATES: dict[tuple[str, str], Template] = {}


def template(strategy: str, place: str) -> Template:
    """The deployment of :class:`FlowRun` for ``strategy`` and ``place`` (made once)."""
    key = (strategy, place)
    if key not in _TEMPLATES:
        directory = tempfile.mkdtemp(prefix="faults-template-", dir=SCRATCH)
        db = fresh_sqlite_database(directory)
        try:
            with PlacementHTTP(os.path.join(directory, "placement")) as real:
                run = FlowRun(strategy, place, "confirm").setup(real, db)
                hosts = dict(run.cloud.hosts)
                server_uuid, flavorid = run.server.uuid, run.f_new.flavorid
        finally:
            db.dispose()
        _TEMPLATES[key] = Template(strategy, place, directory, hosts, server_uuid, flavorid)
    return _TEMPLATES[key]


@pytest.fixture(scope="module", autouse=True)
def _remove_templates() -> Iterator[None]:
    yield
    for made in _TEMPLATES.values():
        shutil.rmtree(made.directory, ignore_errors=True)
    _TEMPLATES.clear()


@contextlib.contextmanager
def proxied_run(
    strategy: str,
    place: str,
    flow: str,
    timeout: float = PATIENT_TIMEOUT,
    options: dict[str, Any] | None = None,
) -> Iterator[tuple[FlowRun, FaultProxy]]:
    """A flow on a copy of the template deployment, its conductor behind a proxy.

    :param timeout: ``[placement] timeout`` of the conductor's client.
    :param options: more ``[placement]`` options for it.

    The checks (``cloud.observer``) read Placement directly. The conductor's
    client has negotiated its microversion already, so the proxy counts only
    the flow's own requests.
    """
    made = template(strategy, place)
    with tempfile.TemporaryDirectory(prefix="faults-", dir=SCRATCH) as tmp:
        shutil.copytree(made.directory, tmp, dirs_exist_ok=True)
        db = Database(sqlite_url(tmp))
        # NOTE: the template's compute services reported when it was made:
        # they report again, or the ComputeFilter finds them down.
        with db._writer() as session:
            session.execute(sa.update(models.Service).values(last_seen_up=models.utcnow()))
        try:
            with (
                PlacementHTTP(os.path.join(tmp, "placement")) as real,
                FaultProxy(real.endpoint, delay=timeout + PAST_TIMEOUT) as proxy,
            ):
                run = FlowRun(strategy, place, flow)
                overrides = (("allow_same_host", place == "same", "resize"),)
                endpoint = Proxied(real, proxy, timeout=timeout, **(options or {}))
                cloud = Cloud(endpoint, db, strategy=strategy, overrides=overrides)
                cloud.hosts = dict(made.hosts)
                cloud.observer = real.client()
                run.cloud = cloud
                run.server = db.server_get(made.server_uuid)
                run.f_new = db.flavor_get(made.new_flavorid)
                transport = rpc.get_transport(
                    cloud.conf, "fake://", exchange=f"faults_{uuid.uuid4().hex}"
                )
                run.manager = ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))
                run.compute = Recorder()
                run.manager.compute = run.compute  # type: ignore[assignment]
                cloud.client.max_version  # noqa: B018 - negotiated before counting
                yield run, proxy
        finally:
            db.dispose()


# -- one cell ---------------------------------------------------------------------


@dataclass
class Outcome:
    """What one played flow did and how it ended."""

    counts: list[int] = field(default_factory=list)  # requests after each message
    errors: list[str] = field(default_factory=list)  # what handlers raised
    ending: str = ""
    user_retries: int = 0
    sweeps: int = 0
    swept: int = 0  # sweeps it took to end (before the final checks)
    healed: bool = False
    violations: list[str] = field(default_factory=list)
    injected: int = 0
    hit: list[str] = field(default_factory=list)  # the requests the faults hit


def _deliver(outcome: Outcome, step: Any) -> None:
    try:
        step()
    except Exception as exc:  # noqa: BLE001 - what an RPC server would log
        inner = getattr(exc, "exc_info", None)
        exc = inner[1] if inner else exc
        outcome.errors.append(f"{type(exc).__name__}: {exc}")


def _sweep(run: FlowRun, outcome: Outcome) -> recovery.RecoveryReport:
    outcome.sweeps += 1
    return recovery.recover(run.manager, idle_for=0)


def _settle(run: FlowRun, outcome: Outcome) -> None:
    """Do what the rest of the system would until the resize ends (bounded)."""
    db, ctxt = run.cloud.db, admin_context()
    decision = "revert" if run.flow == "revert" else "confirm"
    for _ in range(8):
        migration = db.migration_get(run.migration_uuid)
        server = db.server_get(run.server.uuid)
        if migration.status in ENDED and server.task_state is None:
            return
        if migration.status == "migrating":
            # NOTE: the destination answers the prep_resize it was (re)sent.
            step = functools.partial(
                run.manager.resize_prepared, ctxt, migration.uuid, host=migration.dest_host
            )
            _deliver(outcome, step)
        elif migration.status == "post-migrating":
            _deliver(outcome, functools.partial(run.manager.resize_finished, ctxt, migration.uuid))
        elif migration.status == "finished" and server.task_state is None:
            # NOTE: VERIFY_RESIZE: the decision was refused (a fault recorded
            # on the server) or never made; the user asks (again).
            outcome.user_retries += 1
            begin = getattr(actions, f"begin_{decision}")
            _deliver(outcome, functools.partial(begin, db, server.uuid))
            method = getattr(run.manager, f"{decision}_resize")
            _deliver(outcome, functools.partial(method, ctxt, migration.uuid))
        else:
            _sweep(run, outcome)


def _check(run: FlowRun, outcome: Outcome) -> None:
    """Append to ``outcome.violations`` whatever is wrong at the end."""
    db, cloud = run.cloud.db, run.cloud
    migration = db.migration_get(run.migration_uuid)
    server = db.server_get(run.server.uuid)
    v = outcome.violations
    if migration.status not in ENDED or server.task_state is not None:
        v.append(
            f"stuck: migration {migration.status}, server {server.status}/{server.task_state}"
        )
        return
    if server.needs_heal:
        report = _sweep(run, outcome)
        server = db.server_get(run.server.uuid)
        migration = db.migration_get(run.migration_uuid)
        if server.needs_heal:
            v.append(f"needs_heal not healed by the sweep: {report.failed}")
        outcome.healed = True
    expected = {
        "confirmed": (migration.new_flavor, migration.dest_host, "completed"),
        "reverted": (migration.old_flavor, migration.source_host, "reverted"),
        "error": (migration.old_flavor, migration.source_host, "failed-and-restored"),
    }[migration.status]
    flavor, host, outcome.ending = expected
    if run.flow == "revert" and migration.status == "confirmed":
        v.append("a revert ended confirmed")
    if run.flow == "confirm" and migration.status == "reverted":
        v.append("a confirm ended reverted")
    if server.status != "ACTIVE":
        v.append(f"server ended {server.status} ({server.fault_message})")
    if server.flavor != flavor:
        v.append(f"{outcome.ending} with flavor {server.flavor.get('id')}, not {flavor.get('id')}")
    if server.host != host:
        v.append(f"{outcome.ending} on {server.host}, not {host}")
    # Nothing left for an operator: the sweep settles every journal entry.
    report = _sweep(run, outcome)
    if report.failed:
        v.append(f"the sweep failed: {report.failed}")
    left = [e.phase for e in db.journal_list(migration.uuid) if e.state == "intended"]
    if left:
        v.append(f"journal entries left intended: {left}")
    migration = db.migration_get(run.migration_uuid)
    if migration.holdings:
        actual = run.manager.deps.executor.read(migration)  # the proxy is disarmed
        recorded = dict(migration.holdings)
        recorded.pop("generations", None)
        if actual.holdings.to_dict() != recorded:
            v.append(f"DB records {recorded}, Placement holds {actual.holdings.to_dict()}")
    for check in (cloud.check, run.assert_usage_matches_live_servers):
        try:
            check()
        except AssertionError as exc:
            v.append(f"invariant: {exc}")


def play(
    strategy: str,
    place: str,
    flow: str,
    plan: dict[int, str] | None = None,
    timeout: float | None = None,
    options: dict[str, Any] | None = None,
) -> Outcome:
    """Play one flow with ``plan`` (request number -> fault); return the outcome.

    :param timeout: the client's time-out; by default short only when the
        plan holds a ``delay``.
    :param options: more ``[placement]`` options for the conductor's client.
    """
    outcome = Outcome()
    if timeout is None:
        timeout = TIMEOUT if "delay" in (plan or {}).values() else PATIENT_TIMEOUT
    with proxied_run(strategy, place, flow, timeout, options) as (run, proxy):
        proxy.arm(plan)
        checked = False
        for label, step in run.messages():
            _deliver(outcome, step)
            outcome.counts.append(proxy.count)
            if proxy.injected and not checked:
                # NOTE: right after the step that met the fault, before
                # anything else repairs it.
                checked = True
                try:
                    run.cloud.check()
                except AssertionError as exc:
                    outcome.violations.append(f"invariant after {label}: {exc}")
        outcome.injected = len(proxy.injected)
        outcome.hit = [f"{s.method} {s.path.split('?')[0]}" for s in proxy.injected]
        proxy.arm()  # no more faults: the rest of the system recovers
        _settle(run, outcome)
        outcome.swept = outcome.sweeps
        _check(run, outcome)
    return outcome


# -- the matrix ----------------------------------------------------------------------


def plans(fault: str, n: int, writes: set[int]) -> list[tuple[str, dict[int, str]]]:
    """The plans for ``fault`` at request ``n``: once, in the retry, every attempt."""
    if fault == "409":
        if n not in writes:
            return []
        return [
            ("once", {n: fault}),
            ("every attempt", {n + i * WRITE_STRIDE: fault for i in range(WRITE_ATTEMPTS)}),
        ]
    out = [("once", {n: fault})]
    if fault not in ("reset", "delay"):
        # NOTE: twice, a 503's retry fails too, and a 500's next request (the
        # first of the failure path); every attempt covers a reset's or a
        # delay's retries.
        out.append(("twice", {n: fault, n + 1: fault}))
    if fault != "500":
        out.append(("every attempt", {n + i: fault for i in range(ATTEMPTS)}))
    return out


_BASELINES: dict[tuple[str, str, str], tuple[Outcome, set[int], int]] = {}


def _baseline(strategy: str, place: str, flow: str) -> tuple[Outcome, set[int], int]:
    """The flow without faults: its counts, which requests write, where the decision starts."""
    key = (strategy, place, flow)
    if key not in _BASELINES:
        _BASELINES[key] = _count_requests(strategy, place, flow)
    return _BASELINES[key]


def _count_requests(strategy: str, place: str, flow: str) -> tuple[Outcome, set[int], int]:
    outcome = Outcome()
    with proxied_run(strategy, place, flow) as (run, proxy):
        proxy.arm()
        for _label, step in run.messages():
            step()
            outcome.counts.append(proxy.count)
        writes = {s.number for s in proxy.log if s.is_write}
        labels = [label for label, _ in run.messages()]
    decision_starts = outcome.counts[
        labels.index(f"API {'revert' if flow == 'revert' else 'confirm'}") - 1
    ]
    return outcome, writes, decision_starts


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["500", "503", "reset", "delay", "409"])
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_fault_at_every_placement_call(strategy: str, place: str, fault: str) -> None:
    cells = injected = 0
    violations: list[str] = []
    endings: dict[str, int] = {}
    counts: dict[str, int] = {}
    ended_by = {"user retry": 0, "sweep": 0, "heal": 0}
    for flow in ("confirm", "revert"):
        base, writes, decision_from = _baseline(strategy, place, flow)
        assert not base.errors and not base.violations, base
        total = base.counts[-1]
        counts[flow] = total
        # NOTE: the resize's own requests are covered by the confirm flow;
        # the revert flow adds the revert's.
        first = 1 if flow == "confirm" else decision_from + 1
        for n in range(first, total + 1):
            for variant, plan in plans(fault, n, writes):
                outcome = play(strategy, place, flow, plan)
                cells += 1
                injected += outcome.injected
                endings[outcome.ending] = endings.get(outcome.ending, 0) + 1
                ended_by["user retry"] += bool(outcome.user_retries)
                ended_by["sweep"] += bool(outcome.swept)
                ended_by["heal"] += outcome.healed
                violations += [
                    f"{flow} {fault} {variant} at {n} {outcome.hit}: {v}"
                    for v in outcome.violations
                ]
    summary = {
        "strategy": strategy,
        "place": place,
        "fault": fault,
        "requests": counts,
        "cells": cells,
        "faults_injected": injected,
        "endings": endings,
        "ended_by": ended_by,
        "violations": len(violations),
    }
    print(json.dumps(summary))
    with open(SUMMARY, "a") as f:
        f.write(json.dumps({**summary, "found": violations[:50]}) + "\n")
    assert not violations, "\n".join(violations[:20])


# -- regressions (quick suite) --------------------------------------------------------


def _writes_of(strategy: str, place: str, flow: str) -> list[int]:
    """The numbers of the flow's Placement writes, without faults, in order."""
    _base, writes, _decision = _baseline(strategy, place, flow)
    return sorted(writes)


def test_claim_never_answered_is_settled_when_the_resize_fails() -> None:
    # The claim (the second write of a legacy resize) never gets an answer,
    # every retry included: the resize fails and restores. Its journal entry
    # was left intended for good, and the sweep logged it for an operator.
    claim = _writes_of("legacy", "other", "confirm")[1]
    plan = {claim + i: "reset" for i in range(ATTEMPTS)}
    outcome = play("legacy", "other", "confirm", plan)
    assert outcome.injected == ATTEMPTS
    assert outcome.ending == "failed-and-restored"
    assert outcome.violations == []


def test_write_landed_unanswered_then_placement_unreadable_restores_for_real() -> None:
    # The first write (legacy's move) lands but its answer comes too late;
    # the client's retry gets a real generation conflict, and the re-read
    # after it fails through every retry. The executor kept trusting what it
    # knew before the move, so the restore wrote nothing while the database
    # recorded the server restored: Placement held the move.
    move = _writes_of("legacy", "other", "confirm")[0]
    plan = {move: "delay", **{move + 2 + i: "503" for i in range(ATTEMPTS)}}
    outcome = play("legacy", "other", "confirm", plan, timeout=SURE_TIMEOUT)
    assert outcome.injected == 1 + ATTEMPTS
    assert outcome.ending == "failed-and-restored"
    assert outcome.violations == []


def test_revert_landed_with_every_answer_lost_is_completed_not_undone() -> None:
    # The revert's write lands, and its answer and those of every retry are
    # lost. The server went back to VERIFY_RESIZE on its new flavor while
    # Placement had already given the destination's room back.
    # (The client does not retry here, so one delay is every attempt.)
    revert = _writes_of("legacy", "other", "revert")[-1]
    no_retries = {"connect_retries": 0}
    outcome = play(
        "legacy", "other", "revert", {revert: "delay"}, timeout=SURE_TIMEOUT, options=no_retries
    )
    assert outcome.injected == 1
    assert outcome.ending == "reverted"
    assert outcome.user_retries == 0
    assert outcome.violations == []
