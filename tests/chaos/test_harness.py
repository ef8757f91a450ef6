"""The soak's own parts, quickly and without backends: the proxy's random and
held faults, the strategy table the final check expects, the check's verdicts
on small made-up states, and the command line."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import requests

from tests.chaos import checks, report, soak
from tests.chaos.proxy import KINDS, ChaosProxy


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers 200 to everything; records each write's path and arrival time."""

    writes: list[tuple[str, float]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.command != "GET":
            type(self).writes.append((self.path, time.monotonic()))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_PUT = do_POST = do_DELETE = _serve


@pytest.fixture
def upstream() -> Iterator[str]:
    _Echo.writes = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _drawn(upstream: str, seed: int, requests_sent: int) -> list[str | None]:
    proxy = ChaosProxy(upstream, seed=seed, rate=0.5, delay=0.1)
    proxy.chaos(True)
    return [proxy._draw("PUT")[1] for _ in range(requests_sent)]


def test_faults_are_drawn_from_the_seed_and_only_while_on(upstream: str) -> None:
    first, again = _drawn(upstream, 7, 200), _drawn(upstream, 7, 200)
    assert first == again
    assert first != _drawn(upstream, 8, 200)
    assert set(first) == {None, *KINDS}  # every kind, to writes
    proxy = ChaosProxy(upstream, seed=7, rate=1.0, delay=0.1)
    assert [proxy._draw("PUT")[1] for _ in range(20)] == [None] * 20
    proxy.chaos(True)
    reads = {proxy._draw("GET")[1] for _ in range(200)}
    assert reads == {"500", "503", "reset", "delay"}  # no 409 or hold to a read
    assert proxy.counts.total() == 200


def test_a_held_write_lands_after_the_client_gave_up(upstream: str) -> None:
    with ChaosProxy(upstream, seed=1, rate=1.0, delay=0.6, kinds=("hold",)) as proxy:
        proxy.chaos(True)
        sent = time.monotonic()
        with pytest.raises(requests.exceptions.Timeout):
            requests.put(proxy.endpoint + "/allocations/c1", json={}, timeout=0.2)
        gave_up = time.monotonic()
        assert _Echo.writes == []  # not forwarded yet
        assert proxy.holding == 1
        assert proxy.wait_no_holds(timeout=10)
        assert [path for path, _ in _Echo.writes] == ["/allocations/c1"]
        assert _Echo.writes[0][1] > gave_up > sent
        # A read is never held: it goes through untouched.
        assert requests.get(proxy.endpoint + "/usages", timeout=5).status_code == 200
    assert proxy.counts == {"hold": 1}


def test_unknown_fault_kinds_are_refused(upstream: str) -> None:
    with pytest.raises(ValueError, match="unknown fault kinds"):
        ChaosProxy(upstream, seed=1, rate=0.1, delay=0.1, kinds=("hold", "slow"))


OLD = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
NEW = {"VCPU": 1, "MEMORY_MB": 4096, "DISK_GB": 20}
BIGGEST = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20}


def _migration(strategy: str, dest: str = "src", **fields: Any) -> SimpleNamespace:
    values = dict(
        uuid="mig",
        server_uuid="srv",
        claim_strategy=strategy,
        old_resources=OLD,
        new_resources=NEW,
        source_rp_uuid="src",
        dest_rp_uuid=dest,
        status="finished",
        missing=None,
        migration_type="resize",
    )
    values.update(fields)
    return SimpleNamespace(**values)


@pytest.mark.parametrize(
    ("strategy", "dest", "server", "migration"),
    [
        # doc/design.rst, "claim, source chosen" and "claim, other host chosen".
        ("legacy", "src", {"src": NEW}, {"src": OLD}),
        ("legacy", "dst", {"dst": NEW}, {"src": OLD}),
        ("drop_and_reclaim", "src", {"src": NEW}, {}),
        ("drop_and_reclaim", "dst", {"dst": NEW}, {"src": OLD}),
        # max_flavor: BIGGEST on the source, split so a confirm only empties the migration.
        ("max_flavor", "src", {"src": NEW}, {"src": {"VCPU": 1}}),
        ("max_flavor", "dst", {"dst": NEW}, {"src": OLD}),
    ],
)
def test_holdings_awaiting_confirmation_follow_the_strategy_table(
    strategy: str, dest: str, server: dict, migration: dict
) -> None:
    assert checks.expected_in_verify(_migration(strategy, dest)) == (server, migration)


class _Db:
    def __init__(self, servers: list[Any], migrations: list[Any], pending: list[Any] = ()):
        self.servers, self.migrations, self.pending = servers, migrations, list(pending)

    def server_list(self, read_deleted: bool) -> list[Any]:
        return self.servers

    def migration_list(self) -> list[Any]:
        return self.migrations

    def journal_pending(self) -> list[Any]:
        return self.pending


class _Placement:
    def __init__(self, allocations: dict[str, dict[str, dict[str, int]]], total: int = 8):
        self.allocations = allocations  # rp -> consumer -> resources
        self.total = total

    def get_provider_allocations(self, rp: str) -> dict[str, dict[str, int]]:
        return self.allocations.get(rp, {})

    def get_usages(self, rp: str) -> dict[str, int]:
        usage: dict[str, int] = {}
        for resources in self.allocations.get(rp, {}).values():
            for rc, n in resources.items():
                usage[rc] = usage.get(rc, 0) + n
        return usage

    def get_inventories(self, rp: str) -> tuple[dict[str, dict], int]:
        record = {"total": self.total, "reserved": 0, "allocation_ratio": 1.0}
        inventory = {"VCPU": record, "MEMORY_MB": dict(record, total=8192)}
        return inventory | {"DISK_GB": dict(record, total=100)}, 1


def _server(uuid: str, status: str = "ACTIVE", rp: str | None = "src", **fields: Any) -> Any:
    values = dict(
        uuid=uuid,
        name=uuid,
        status=status,
        task_state=None,
        rp_uuid=rp,
        host=None if rp is None else f"host-of-{rp}",
        needs_heal=False,
        deleted_at=None,
        flavor={"vcpus": 1, "memory_mb": 512, "root_gb": 5},
    )
    values.update(fields)
    return SimpleNamespace(**values)


FLAVOR = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}
PROVIDERS = {"h1": "src", "h2": "dst"}


def test_a_settled_deployment_has_no_violation() -> None:
    db = _Db(
        [
            _server("a"),
            _server("b", "VERIFY_RESIZE", rp="dst"),
            _server("gone", "DELETED", rp=None, deleted_at=1),
            _server("failed", "ERROR", rp=None),
        ],
        [_migration("legacy", "dst", server_uuid="b"), _migration("max_flavor", uuid="old")],
    )
    placement = _Placement({"src": {"a": FLAVOR, "mig": OLD}, "dst": {"b": NEW}})
    assert checks.check(db, placement, PROVIDERS, accepted_deletes=["gone"]) == []


def test_each_kind_of_violation_is_found() -> None:
    db = _Db(
        [
            _server("a"),
            _server("building", "BUILD", task_state="scheduling"),
            _server("gone", "DELETED", rp=None, deleted_at=1),
            _server("kept", "ACTIVE"),
        ],
        [_migration("max_flavor", uuid="closed", status="confirmed", server_uuid="a")],
        pending=[SimpleNamespace(migration_uuid="closed", seq=3, phase="confirm")],
    )
    placement = _Placement(
        {
            "src": {"a": FLAVOR, "gone": FLAVOR, "closed": FLAVOR, "stranger": {"VCPU": 9}},
            "dst": {},
        }
    )
    found = checks.check(db, placement, PROVIDERS, accepted_deletes=["kept"])
    kinds = sorted(v.kind for v in found)
    assert kinds == [
        "delete lost",  # kept: accepted a delete, still ACTIVE
        "holdings",  # the confirmed migration holds
        "holdings",  # the deleted server holds
        "holdings",  # kept holds nothing, not its flavor
        "orphan",  # stranger
        "transitional",  # the journal entry
        "transitional",  # the server in BUILD
        "usage",  # VCPU 1 + 1 + 1 + 9 over 8
    ], found
    assert any("stranger" in v.detail for v in found if v.kind == "orphan")


SAME = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def test_settled_moves_have_no_violation() -> None:
    db = _Db(
        [
            _server("shelved", "SHELVED"),
            _server("offloaded", "SHELVED_OFFLOADED", rp=None),
            _server("cold", "VERIFY_RESIZE", rp="dst", flavor={"vcpus": 2, "memory_mb": 2048}),
            _server("lived", "ACTIVE", rp="dst"),
            _server("rolled-back", "ACTIVE"),
        ],
        [
            # A cold migration awaiting confirmation: a resize to the same flavor.
            _migration(
                "legacy",
                "dst",
                uuid="cold-mig",
                server_uuid="cold",
                old_resources=SAME,
                new_resources=SAME,
                migration_type="migration",
            ),
            _migration("legacy", "dst", uuid="live-ok", server_uuid="lived", status="completed"),
            _migration(
                "legacy", "dst", uuid="live-bad", server_uuid="rolled-back", status="error"
            ),
        ],
    )
    placement = _Placement(
        {
            "src": {"shelved": FLAVOR, "rolled-back": FLAVOR, "cold-mig": SAME},
            "dst": {"cold": SAME, "lived": FLAVOR},
        }
    )
    assert checks.check(db, placement, PROVIDERS, accepted_deletes=[]) == []


def test_moves_holding_other_than_their_state_says_are_violations() -> None:
    db = _Db(
        [
            _server("offloaded", "SHELVED_OFFLOADED", rp=None),
            _server("offloaded-with-host", "SHELVED_OFFLOADED"),
            _server("shelved", "SHELVED"),
            _server("lived", "ACTIVE", rp="dst"),
            _server("still-live", "ACTIVE", rp="src"),
            _server("cold", "VERIFY_RESIZE", rp="src", flavor={"vcpus": 2, "memory_mb": 2048}),
        ],
        [
            _migration(
                "drop_and_reclaim",
                uuid="cold-mig",
                server_uuid="cold",
                old_resources=SAME,
                new_resources=SAME,
                migration_type="migration",
            ),
            _migration("legacy", "dst", uuid="live-done", server_uuid="lived", status="completed"),
            _migration(
                "legacy", "dst", uuid="live-run", server_uuid="still-live", status="running"
            ),
        ],
    )
    placement = _Placement(
        {
            "src": {"offloaded": FLAVOR, "live-done": FLAVOR, "still-live": FLAVOR, "cold": SAME},
            "dst": {"lived": FLAVOR, "live-run": FLAVOR},
        }
    )
    found = checks.check(db, placement, PROVIDERS, accepted_deletes=[])
    assert sorted((v.kind, v.detail.split()[1]) for v in found) == [
        ("holdings", "cold"),  # a cold migration that stayed on its source
        ("holdings", "live-done"),  # a completed live migration still holds the source
        ("holdings", "offloaded"),  # offloaded but holding its flavor
        ("holdings", "offloaded-with-host"),  # offloaded but still on a host
        ("holdings", "shelved"),  # shelved on its host but holding nothing there
        ("transitional", "still-live"),  # a live migration still running
    ], found


def test_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = soak.parse_args(["--seed", "4", "--option", "conductor.workers=2"])
    assert args.strategy == "drop_and_reclaim"  # 4 mod 3
    assert "[conductor]\n" in soak.config_text(args)
    assert "workers = 2\n" in soak.config_text(args)
    assert soak.parse_args(["--seed", "4", "--strategy", "legacy"]).strategy == "legacy"
    with pytest.raises(SystemExit):
        soak.parse_args(["--faults", "500,slow"])
    assert soak.parse_args([]).moves == ("migrate", "live-migrate", "shelve")
    assert soak.parse_args(["--moves", "none"]).moves == ()
    assert soak.parse_args(["--moves", "shelve"]).moves == ("shelve",)
    with pytest.raises(SystemExit):
        soak.parse_args(["--moves", "evacuate"])
    assert "shelved_offload_time = 15\n" in soak.config_text(args)
    assert soak.main(["--seed", "1", "--transport-url", "", "--db-url", ""]) == soak.EXIT_HARNESS
    assert "harness error" in capsys.readouterr().err


def test_a_server_waiting_for_room_to_heal_is_a_note_not_a_violation() -> None:
    flagged = _server(
        "flagged", needs_heal=True, flavor={"vcpus": 4, "memory_mb": 512, "root_gb": 5}
    )
    db = _Db([flagged, _server("big", flavor={"vcpus": 6, "memory_mb": 512, "root_gb": 5})], [])
    full = _Placement({"src": {"big": {"VCPU": 6, "MEMORY_MB": 512, "DISK_GB": 5}}})
    (note,) = checks.check(db, full, PROVIDERS, accepted_deletes=[])
    assert (note.kind, note.blocking) == ("transitional", False)
    assert "no room" in note.detail
    # With room on the host, a server still flagged is a violation.
    db.servers = [flagged]
    (found,) = checks.check(db, _Placement({}), PROVIDERS, accepted_deletes=[])
    assert (found.kind, found.blocking) == ("transitional", True)


def test_the_report_reads_the_logs_and_prints_every_figure(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "conductor.log"
    log.write_text(
        "x ERROR oslo_messaging.rpc.server [-] Exception during message handling: "
        "resize_sched.exception.PlacementUnavailable: down\nTraceback (most recent call last):\n"
        "x WARNING resize_sched.conductor.reaper [-] Reaper gave back what 2 consumer(s) of\n"
    )
    logs = report.from_logs({"conductor": SimpleNamespace(log_path=log)})
    assert logs == {
        "tracebacks": {"conductor": 1},
        "unexpected_exceptions": {"conductor: resize_sched.exception.PlacementUnavailable": 1},
        "reaped": 2,
    }
    figures = {
        "seed": 3,
        "strategy": "legacy",
        "clients": 2,
        "computes": 3,
        "duration_s": 10.0,
        "operations": {"create": dict.fromkeys(report.OUTCOME_COLUMNS, 1)},
        "operations_total": 7,
        "deletes_during": {"create": 1},
        "faults": dict.fromkeys(KINDS, 1),
        "placement_requests": 100,
        "kills": {"conductor worker": 1},
        "restarts_after_exit": {},
        "api_5xx": [],
        "notes": [],
        "violations": [{"kind": "orphan", "detail": "consumer c holds {}"}],
        "timings_s": {"chaos": 10.0},
        **logs,
    }
    report.print_report(figures)
    out = capsys.readouterr().out
    assert "seed 3, strategy legacy" in out
    assert "hold 1" in out and "conductor worker 1" in out
    assert "gave back (late writes): 2" in out
    assert "violations: 1\n  [orphan] consumer c holds {}" in out
