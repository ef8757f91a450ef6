"""The HA run's faults and what each window shows.

:class:`Fault` is one injected fault and its times; :func:`schedule` names
the run's faults in order (``doc/ha.rst``, "The fault schedule"). What the
daemons logged is read by :func:`read_logs` into a :class:`Trace`: the cast
trace of :mod:`resize_sched.rpc` (``rpc sent``, ``rpc refused``, ``rpc
received``, each with the message's id), the database layer's retries and
the ERROR lines, each with its time. :func:`window_figures` then gives one
fault's row of the table from the clients' :class:`~tests.chaos.clients.Tally`
and the trace.
"""

from __future__ import annotations

import collections
import pathlib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The faults, in the order they are injected.
SCHEDULE = (
    "rabbit-leader-kill",
    "rabbit-leader-kill",
    "rabbit-full-stop",
    "rabbit-stop-app",
    "galera-kill",
)
#: What a fault's row says it was.
DESCRIPTIONS = {
    "rabbit-leader-kill": "SIGKILL the broker node leading the conductor queue, restart it",
    "rabbit-full-stop": "stop every broker node, then start them all",
    "rabbit-stop-app": "rabbitmqctl stop_app on the conductor queue's leader, start_app later",
    "galera-kill": "SIGKILL Galera node 2 (conductor2's primary) under load, rejoin it",
}
#: Outcomes (tests/chaos/clients.py) that count as failed in a window.
FAILED = ("failed", "timeout", "error")

#: oslo.log's line: time, pid, level, logger, the context in brackets, the message.
_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3}) \d+ (\w+) (\S+) (?:\[[^\]]*\] )?(.*)$"
)
_TRACE = re.compile(r"^rpc (sent|refused|received) (\S+)(?: (\S+) (\S+))?")
#: The database layer's retry of a deadlock or a lost connection
#: (resize_sched/db/session.py), and oslo.db's wrap_db_retry (DEBUG).
RETRY = re.compile(
    r"database (deadlock|connection lost) \(attempt|DB error|Performing DB retry",
    re.IGNORECASE,
)
#: The database layer giving up (counted with the errors).
GAVE_UP = re.compile(r"database (deadlock|connection lost), giving up", re.IGNORECASE)


@dataclass
class Fault:
    """One fault of the schedule and its times (``time.time()`` seconds).

    :ivar kind: a name of :data:`SCHEDULE`.
    :ivar label: the row's name (``rabbit-leader-kill#1``...).
    :ivar target: the node it hit.
    :ivar start: the start of its window (the harness began injecting it).
    :ivar t0: when it was injected.
    :ivar clock: when the recovery clock starts: ``t0`` while a majority of
        the cluster stays up, the moment the cluster was back for a full
        stop (nothing can recover before).
    :ivar restored: when the harness undid it (node restarted, rejoined).
    :ivar end: the end of its window (the next fault's ``t0``).
    """

    kind: str
    label: str
    target: str = ""
    start: float = 0.0
    t0: float = 0.0
    clock: float = 0.0
    restored: float = 0.0
    end: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def schedule() -> list[Fault]:
    """The run's faults, numbered where a kind repeats."""
    seen: collections.Counter[str] = collections.Counter()
    faults = []
    for kind in SCHEDULE:
        seen[kind] += 1
        label = f"{kind}#{seen[kind]}" if SCHEDULE.count(kind) > 1 else kind
        faults.append(Fault(kind, label))
    return faults


@dataclass
class Trace:
    """What the daemons' logs say, each entry with its time.

    :ivar sent: message id -> (time, daemon, method, target).
    :ivar refused: (time, daemon, method, id) of casts that raised to their sender.
    :ivar received: message id -> the times it was dispatched.
    :ivar receivers: message id -> (time, daemon) of each dispatch.
    :ivar retries: (time, daemon, line) of the database layer's retries.
    :ivar errors: (time, daemon, line) of ERROR lines, but oslo.messaging's.
    :ivar broker_errors: (time, daemon, line) of oslo.messaging's ERROR lines
        (a connection to a broker node lost, retried).
    :ivar info: daemon -> (time, line) of resize_sched's own INFO and WARNING
        lines, to show what a handler did with a second delivery.
    """

    sent: dict[str, tuple[float, str, str, str]] = field(default_factory=dict)
    refused: list[tuple[float, str, str, str]] = field(default_factory=list)
    received: dict[str, list[float]] = field(default_factory=dict)
    receivers: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    retries: list[tuple[float, str, str]] = field(default_factory=list)
    errors: list[tuple[float, str, str]] = field(default_factory=list)
    broker_errors: list[tuple[float, str, str]] = field(default_factory=list)
    info: dict[str, list[tuple[float, str]]] = field(default_factory=dict)

    def lost(self) -> list[str]:
        """Ids sent (the transport took them) and never received."""
        return sorted(set(self.sent) - set(self.received))

    def redelivered(self) -> list[str]:
        """Ids received more than once."""
        return sorted(i for i, times in self.received.items() if len(times) > 1)

    def after_second(self, message_id: str, seconds: float = 0.5) -> str:
        """The first line resize_sched logged in the receiving daemon within
        ``seconds`` of a message's second delivery (what the handler did with
        it, as far as the log tells: a stale no-op says so), or ''."""
        deliveries = sorted(self.receivers.get(message_id, []))
        if len(deliveries) < 2:
            return ""
        when, daemon = deliveries[1]
        lines = self.info.get(daemon, [])
        return next((f"{daemon}: {line}" for t, line in lines if when <= t <= when + seconds), "")


def _when(stamp: str, millis: str) -> float:
    # NOTE: oslo.log writes local time, as time.mktime reads it.
    return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000


def read_logs(logs: Mapping[str, pathlib.Path]) -> Trace:
    """Read every daemon's log (name -> path) into a :class:`Trace`."""
    trace = Trace()
    for name, path in logs.items():
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            match = _LINE.match(line)
            if match is None:
                continue
            when = _when(match[1], match[2])
            level, message = match[3], match[5]
            found = _TRACE.match(message) if match[4] == "resize_sched.rpc.trace" else None
            if found is not None:
                kind, message_id = found[1], found[2]
                if kind == "sent":
                    trace.sent[message_id] = (when, name, found[3] or "", found[4] or "")
                elif kind == "refused":
                    trace.refused.append((when, name, found[3] or "", message_id))
                else:
                    trace.received.setdefault(message_id, []).append(when)
                    trace.receivers.setdefault(message_id, []).append((when, name))
                continue
            if RETRY.search(message):
                trace.retries.append((when, name, message[:200]))
            logger = match[4]
            if GAVE_UP.search(message):
                trace.errors.append((when, name, message[:200]))
            elif level in ("ERROR", "CRITICAL"):
                broker = logger.startswith(("oslo.messaging", "oslo_messaging", "kombu", "amqp"))
                (trace.broker_errors if broker else trace.errors).append(
                    (when, name, message[:200])
                )
            elif level in ("INFO", "WARNING") and logger.startswith("resize_sched."):
                trace.info.setdefault(name, []).append((when, message[:200]))
    return trace


def _within(when: float, start: float, end: float) -> bool:
    return start <= when < end


def window_figures(
    start: float,
    end: float,
    events: Sequence[tuple[float, float, str, str]],
    trace: Trace,
    server_errors: Iterable[float] = (),
    clock: float | None = None,
) -> dict[str, Any]:
    """One window's row: operations, casts, retries, errors, recovery.

    :param start: the window's start (a fault's ``t0``).
    :param end: its end.
    :param events: the clients' (began, ended, operation, outcome).
    :param trace: the daemons' logs.
    :param server_errors: when the API answered 5xx.
    :param clock: when the recovery clock starts (``start`` if None).
    :returns: ``attempted`` (operations sent in the window), ``completed``
        (of those, ok), ``failed`` (failed, timeout or error), ``refused``
        (4xx), ``casts_sent``, ``casts_lost``, ``casts_redelivered``,
        ``casts_refused``, ``db_retries``, ``errors`` (ERROR lines but
        oslo.messaging's), ``broker_errors`` (oslo.messaging's), ``api_5xx``,
        ``first_ok_s`` and ``first_resize_s`` (seconds from the clock to the
        first operation, the first resize, sent after it and completed ok;
        None when none did in the window).
    """
    clock = start if clock is None else clock
    mine = [e for e in events if _within(e[0], start, end)]
    outcomes = collections.Counter(e[3] for e in mine)
    after = [e for e in events if e[0] >= clock and e[1] < end and e[3] == "ok"]
    first = min((e[1] for e in after), default=None)
    first_resize = min((e[1] for e in after if e[2] == "resize"), default=None)
    sent = [i for i, (when, *_) in trace.sent.items() if _within(when, start, end)]
    return {
        "attempted": len(mine),
        "completed": outcomes["ok"],
        "failed": sum(outcomes[o] for o in FAILED),
        "refused": outcomes["refused"],
        "casts_sent": len(sent),
        "casts_lost": sum(1 for i in sent if i not in trace.received),
        "casts_redelivered": sum(1 for i in sent if len(trace.received.get(i, ())) > 1),
        "casts_refused": sum(1 for r in trace.refused if _within(r[0], start, end)),
        "db_retries": sum(1 for r in trace.retries if _within(r[0], start, end)),
        "errors": sum(1 for r in trace.errors if _within(r[0], start, end)),
        "broker_errors": sum(1 for r in trace.broker_errors if _within(r[0], start, end)),
        "api_5xx": sum(1 for t in server_errors if _within(t, start, end)),
        "first_ok_s": None if first is None else round(first - clock, 1),
        "first_resize_s": None if first_resize is None else round(first_resize - clock, 1),
    }


#: The table's columns: (heading, key).
COLUMNS = (
    ("ops", "attempted"),
    ("ok", "completed"),
    ("failed", "failed"),
    ("4xx", "refused"),
    ("casts", "casts_sent"),
    ("lost", "casts_lost"),
    ("doubled", "casts_redelivered"),
    ("refused", "casts_refused"),
    ("first ok", "first_ok_s"),
    ("resize", "first_resize_s"),
    ("retries", "db_retries"),
    ("errors", "errors"),
    ("5xx", "api_5xx"),
    ("amqp err", "broker_errors"),
)


def table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The rows (label, figures) as a plain-text table."""
    width = max([len(label) for label, _ in rows] + [10])
    head = f"{'window':{width}}" + "".join(f"{h:>9}" for h, _ in COLUMNS)
    lines = [head, "-" * len(head)]
    for label, figures in rows:
        cells = []
        for _, key in COLUMNS:
            value = figures.get(key)
            cells.append(f"{'-' if value is None else value:>9}")
        lines.append(f"{label:{width}}" + "".join(cells))
    return "\n".join(lines)
