"""Tempest's results, read from its subunit stream, test by test and class by class.

:func:`read` turns a subunit v2 stream (``stestr last --subunit``) into one
:class:`Result` per test; :func:`report` prints them grouped by class and
:func:`closing_line` is the line that ends a run: ``N passed, N failed``
(``, N skipped`` after when any was skipped).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
_STATUS = {
    "success": PASSED,
    "xfail": PASSED,
    "fail": FAILED,
    "uxsuccess": FAILED,
    "skip": SKIPPED,
}
#: ``setUpClass (tempest.api.compute.x.Class)``: a class-level fixture's outcome.
_FIXTURE = re.compile(r"^(?P<fixture>\w+) \((?P<cls>[\w.]+)\)$")
#: Tempest's attributes after a test's name: ``[id-...,smoke]``.
_ATTRS = re.compile(r"\[[^\]]*\]$")
#: An exception's line in a traceback: ``module.SomeError: message``.
_EXCEPTION = re.compile(
    r"^((?:[a-z_]\w*\.)+[A-Z]\w*|\w*(?:Error|Exception|Failure|Mismatch))(: |$)"
)


@dataclass(frozen=True)
class Result:
    """One test's outcome.

    :ivar test_id: the test's id, attributes removed.
    :ivar status: :data:`PASSED`, :data:`FAILED` or :data:`SKIPPED`.
    :ivar reason: why it was skipped, or the last line of its failure.
    """

    test_id: str
    status: str
    reason: str = ""

    @property
    def cls(self) -> str:
        """The test's class (for a class fixture, the class it belongs to)."""
        fixture = _FIXTURE.match(self.test_id)
        if fixture is not None:
            return fixture.group("cls")
        return self.test_id.rsplit(".", 1)[0]

    @property
    def name(self) -> str:
        """The test's name within its class."""
        fixture = _FIXTURE.match(self.test_id)
        if fixture is not None:
            return fixture.group("fixture")
        return self.test_id.rsplit(".", 1)[-1]


def _text(details: dict[str, Any], key: str) -> str:
    content = details.get(key)
    if content is None:
        return ""
    try:
        return content.as_text()
    except Exception:  # noqa: BLE001 - binary or broken content: no reason
        return ""


def _failure(traceback: str) -> str:
    """The exception's line in a traceback, and Tempest's ``Details:`` line after it."""
    lines = [line.strip() for line in traceback.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if _EXCEPTION.match(lines[i]):
            found = lines[i]
            if i + 1 < len(lines) and lines[i + 1].startswith("Details:"):
                found += " " + lines[i + 1]
            return found[:300]
    return lines[-1][:300] if lines else ""


def _reason(status: str, details: dict[str, Any]) -> str:
    if status == SKIPPED:
        return _text(details, "reason").strip()
    if status == FAILED:
        return _failure(_text(details, "traceback"))
    return ""


def from_events(events: Iterable[dict[str, Any]]) -> list[Result]:
    """Results from testtools' per-test dicts (``id``, ``status``, ``details``)."""
    found: dict[str, Result] = {}
    for event in events:
        status = _STATUS.get(event.get("status", ""))
        if status is None:
            continue
        test_id = _ATTRS.sub("", event["id"])
        found[test_id] = Result(test_id, status, _reason(status, event.get("details", {})))
    return sorted(found.values(), key=lambda r: (r.cls, r.test_id))


def read(stream: IO[bytes]) -> list[Result]:
    """The results in a subunit v2 byte stream."""
    import subunit
    import testtools

    events: list[dict[str, Any]] = []
    result = testtools.StreamToDict(events.append)
    result.startTestRun()
    try:
        subunit.ByteStreamToStreamResult(stream, non_subunit_name="stdout").run(result)
    finally:
        result.stopTestRun()
    return from_events(events)


def counts(results: Iterable[Result]) -> collections.Counter[str]:
    """How many passed, failed and were skipped."""
    return collections.Counter(r.status for r in results)


def closing_line(results: Iterable[Result]) -> str:
    """``N passed, N failed`` with ``, N skipped`` when any was skipped."""
    tally = counts(results)
    line = f"{tally[PASSED]} passed, {tally[FAILED]} failed"
    if tally[SKIPPED]:
        line += f", {tally[SKIPPED]} skipped"
    return line


def by_class(results: Iterable[Result]) -> dict[str, list[Result]]:
    """The results of each class, classes in order."""
    grouped: dict[str, list[Result]] = collections.defaultdict(list)
    for result in results:
        grouped[result.cls].append(result)
    return dict(sorted(grouped.items()))


def report(results: list[Result], out: IO[str]) -> None:
    """Print each class's tally and its tests (the closing line is the caller's)."""
    marks = {PASSED: "ok  ", FAILED: "FAIL", SKIPPED: "skip"}
    for cls, members in by_class(results).items():
        tally = counts(members)
        out.write(
            f"{cls}: {tally[PASSED]} passed, {tally[FAILED]} failed, {tally[SKIPPED]} skipped\n"
        )
        for result in members:
            reason = f"  ({result.reason})" if result.reason else ""
            out.write(f"  {marks[result.status]} {result.name}{reason}\n")


def rst_table(results: list[Result], prefix: str = "tempest.api.compute.") -> str:
    """The class tallies as a reStructuredText list-table (for doc/tempest.rst)."""
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 64 12 12 12",
        "",
        "   * - Class",
        "     - passed",
        "     - failed",
        "     - skipped",
    ]
    for cls, members in by_class(results).items():
        tally = counts(members)
        name = cls.removeprefix(prefix)
        lines.append(f"   * - ``{name}``")
        lines += [f"     - {tally[status]}" for status in (PASSED, FAILED, SKIPPED)]
    return "\n".join(lines) + "\n"
