"""The HA run's reading of the daemons' logs and its windows (no backend needed)."""

from __future__ import annotations

import pathlib
import time

from tests.ha import faults

TRACE = "resize_sched.rpc.trace"


def _stamp(when: float) -> str:
    return (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
        + f".{int(when * 1000) % 1000:03d}"
    )


def _line(when: float, level: str, logger: str, message: str) -> str:
    # NOTE: oslo.log ends a DEBUG line with the function and file that logged it.
    suffix = " cast rpc.py:1" if level == "DEBUG" else ""
    return f"{_stamp(when)} 4242 {level} {logger} [req-1 - - - - -] {message}{suffix}\n"


def _logs(tmp_path: pathlib.Path, base: float) -> dict[str, pathlib.Path]:
    api = tmp_path / "api.log"
    api.write_text(
        "==== soak: start #1\n"
        + _line(base + 1.0, "DEBUG", TRACE, "rpc sent a1 build_server conductor")
        + _line(base + 2.0, "DEBUG", TRACE, "rpc sent a2 resize_server conductor")
        + _line(base + 3.0, "DEBUG", TRACE, "rpc refused a3 resize_server conductor: down")
        + _line(base + 11.0, "DEBUG", TRACE, "rpc sent a4 confirm_resize conductor")
        + _line(base + 12.0, "ERROR", "resize_sched.api", "something broke")
    )
    conductor = tmp_path / "conductor.log"
    conductor.write_text(
        _line(base + 1.5, "DEBUG", TRACE, "rpc received a1")
        + _line(base + 2.5, "DEBUG", TRACE, "rpc received a2")
        + _line(base + 4.0, "DEBUG", TRACE, "rpc received a2")
        + _line(base + 4.1, "INFO", "resize_sched.conductor.manager", "a2: nothing to do")
        + _line(base + 4.2, "ERROR", "oslo.messaging._drivers.impl_rabbit", "AMQP unreachable")
        + _line(
            base + 5.0,
            "WARNING",
            "resize_sched.db.session",
            "ServerApi.save: database deadlock (attempt 1 of 5), retrying the transaction",
        )
        + _line(
            base + 5.5,
            "INFO",
            "resize_sched.db.session",
            "LeaseApi.take: database connection lost (attempt 2 of 5), retrying the transaction",
        )
        + _line(
            base + 5.6,
            "WARNING",
            "resize_sched.db.session",
            "LeaseApi.take: database connection lost, giving up after 5 attempts: gone",
        )
        + _line(base + 6.0, "DEBUG", "oslo_db.api", "DB error: (1213, 'Deadlock found')")
    )
    return {"api": api, "conductor": conductor}


def test_the_logs_give_each_cast_its_sender_and_receptions(tmp_path: pathlib.Path) -> None:
    base = time.time() - 100
    trace = faults.read_logs(_logs(tmp_path, base) | {"gone": tmp_path / "missing.log"})
    assert set(trace.sent) == {"a1", "a2", "a4"}
    assert trace.sent["a2"][1:] == ("api", "resize_server", "conductor")
    assert abs(trace.sent["a1"][0] - (base + 1.0)) < 0.01
    assert trace.lost() == ["a4"]
    assert trace.redelivered() == ["a2"]
    assert [(r[1], r[2], r[3]) for r in trace.refused] == [("api", "resize_server", "a3")]
    assert len(trace.retries) == 3
    assert sorted((e[1], e[2][:14]) for e in trace.errors) == [
        ("api", "something broke"[:14]),
        ("conductor", "LeaseApi.take:"),
    ]
    assert [(e[1], e[2]) for e in trace.broker_errors] == [("conductor", "AMQP unreachable")]
    assert trace.after_second("a2") == "conductor: a2: nothing to do"
    assert trace.after_second("a1") == ""


def test_a_window_counts_only_what_fell_in_it(tmp_path: pathlib.Path) -> None:
    base = time.time() - 100
    trace = faults.read_logs(_logs(tmp_path, base))
    events = [
        (base + 0.5, base + 9.0, "resize", "ok"),  # sent before the window
        (base + 2.0, base + 4.0, "create", "ok"),
        (base + 2.5, base + 8.0, "resize", "ok"),
        (base + 3.0, base + 3.5, "migrate", "refused"),
        (base + 4.0, base + 30.0, "resize", "timeout"),
        (base + 12.0, base + 14.0, "resize", "ok"),  # after it
    ]
    row = faults.window_figures(
        base + 1.8, base + 10.0, events, trace, [base + 5.0], clock=base + 2.2
    )
    assert row["attempted"] == 4
    assert (row["completed"], row["failed"], row["refused"]) == (2, 1, 1)
    assert (row["casts_sent"], row["casts_lost"], row["casts_redelivered"]) == (1, 0, 1)
    assert row["casts_refused"] == 1
    assert row["db_retries"] == 3
    assert (row["errors"], row["api_5xx"]) == (1, 1)  # the give-up; the ERROR line is later
    # NOTE: the first operation sent after the clock and ended ok.
    assert row["first_ok_s"] == 5.8 and row["first_resize_s"] == 5.8
    later = faults.window_figures(base + 10.0, base + 20.0, events, trace)
    assert later["casts_lost"] == 1 and later["errors"] == 1 and later["api_5xx"] == 0
    assert later["first_resize_s"] == 4.0


def test_no_recovery_in_the_window_is_none() -> None:
    row = faults.window_figures(0.0, 10.0, [(1.0, 11.0, "resize", "ok")], faults.Trace())
    assert row["first_ok_s"] is None and row["first_resize_s"] is None


def test_the_schedule_numbers_repeated_faults() -> None:
    labels = [f.label for f in faults.schedule()]
    assert labels == [
        "rabbit-leader-kill#1",
        "rabbit-leader-kill#2",
        "rabbit-full-stop",
        "rabbit-stop-app",
        "galera-kill",
    ]
    assert set(faults.SCHEDULE) == set(faults.DESCRIPTIONS)


def test_the_table_has_a_line_per_window() -> None:
    text = faults.table(
        [("galera-kill", {"attempted": 3, "first_resize_s": None, "casts_lost": 0})]
    )
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["window", "ops", "ok"]
    assert lines[2].split()[:2] == ["galera-kill", "3"]
    assert lines[2].split()[6] == "0" and lines[2].split()[10] == "-"
    assert lines[0].split()[-2:] == ["amqp", "err"]
