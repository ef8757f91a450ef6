"""What the chaos soak and the HA run share: one main loop, exit codes and process helpers.

Both start real processes, run clients against them under faults, check
what is left and print a verdict. :func:`run_main` is that loop, once:
the scratch directory, Ctrl-C and SIGTERM turned into a clean stop, a
harness failure told apart from a finding, the figures written, the
verdict and its exit code (:data:`EXIT_OK` 0 pass, :data:`EXIT_FAILED` 1
violations, :data:`EXIT_HARNESS` 2 could not run, :data:`EXIT_INTERRUPTED`
130). The process helpers below stop, kill and read the daemons and nodes
both start.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any, Protocol

EXIT_OK, EXIT_FAILED, EXIT_HARNESS, EXIT_INTERRUPTED = 0, 1, 2, 130

VERDICTS = {
    EXIT_OK: "PASS",
    EXIT_HARNESS: "HARNESS ERROR (not a finding about resize_sched)",
    EXIT_INTERRUPTED: "INTERRUPTED",
}


class HarnessError(Exception):
    """The run could not happen (a backend missing, a daemon that did not start).

    Never a finding about resize_sched: the run exits with its own code.
    """


class Interrupted(BaseException):
    """Ctrl-C or SIGTERM (a BaseException: no ``except Exception`` swallows it)."""


# -- processes ---------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tail(path: pathlib.Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a log, for an error message."""
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc)."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                found += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return found


def signal_group(proc: subprocess.Popen[Any], signum: int) -> None:
    """Send ``signum`` to the process group ``proc`` leads, if it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def kill_group(proc: subprocess.Popen[Any], wait: float = 30.0) -> None:
    """SIGKILL the process group ``proc`` leads, and reap ``proc``."""
    signal_group(proc, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait)


def end_process(proc: subprocess.Popen[Any] | None, timeout: float) -> None:
    """Wait ``timeout`` seconds for ``proc`` to exit on its own, then SIGKILL its group."""
    if proc is None:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)
    kill_group(proc, wait=10)


# -- the main loop -----------------------------------------------------------------------


class Job(Protocol):
    """One run as :func:`run_main` drives it (the soak, the HA run)."""

    def progress(self, message: str) -> None: ...

    def collect(self) -> dict[str, Any]:
        """Run, then return the figures; raise :class:`HarnessError` if it could not."""

    def clean_up(self, figures: dict[str, Any]) -> dict[str, Any]:
        """Stop the clients and everything started; the figures, filled if still empty."""

    def report(self, figures: dict[str, Any]) -> None:
        """Print the figures."""

    def failed(self, figures: dict[str, Any]) -> bool:
        """Whether the run found something (printing what, if the report did not)."""

    def keep_workdir(self, figures: dict[str, Any]) -> bool:
        """Whether a passing run's logs are worth keeping."""


def run_main(
    name: str,
    title: str,
    workdir: str | None,
    prefix: str,
    make_job: Callable[[pathlib.Path], Job],
    *,
    json_path: str | None,
    failed_verdict: str,
) -> int:
    """Run the job ``make_job`` builds in its scratch directory; the exit code.

    :param name: the run's name in messages (``chaos soak``, ``ha run``).
    :param title: the first progress line.
    :param workdir: the directory asked for (kept), or None for a scratch one
        (removed after a clean pass).
    :param prefix: the scratch directory's prefix.
    :param json_path: where to write the figures, if anywhere.
    :param failed_verdict: the verdict of exit code 1.
    """
    own_dir = workdir is None
    path = pathlib.Path(workdir or tempfile.mkdtemp(prefix=prefix))
    path.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()

    def interrupt(signum: int, frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    job = make_job(path)
    code = EXIT_OK
    figures: dict[str, Any] = {}
    job.progress(title.format(workdir=path))
    try:
        try:
            figures = job.collect()
        except HarnessError as exc:
            print(f"\n{name}: harness error: {exc}", file=sys.stderr)
            code = EXIT_HARNESS
        except Exception:  # noqa: BLE001 - a bug of the harness, not a finding
            print(f"\n{name}: harness error: unexpected exception", file=sys.stderr)
            traceback.print_exc()
            code = EXIT_HARNESS
        except (Interrupted, KeyboardInterrupt) as exc:
            print(f"\n{name}: interrupted ({exc}); cleaning up", file=sys.stderr)
            code = EXIT_INTERRUPTED
        finally:
            # NOTE: a second Ctrl-C must not cut the clean-up short.
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
            figures = job.clean_up(figures)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    wall = time.monotonic() - began
    if figures:
        figures["wall_s"] = round(wall, 1)
        job.report(figures)
        if json_path:
            pathlib.Path(json_path).write_text(json.dumps(figures, indent=2) + "\n")
    if code == EXIT_OK and job.failed(figures):
        code = EXIT_FAILED
    verdict = {**VERDICTS, EXIT_FAILED: failed_verdict}[code]
    print(f"\nresult: {verdict}, exit {code}, wall {wall:.0f} s", flush=True)
    if own_dir and code == EXIT_OK and not job.keep_workdir(figures):
        shutil.rmtree(path, ignore_errors=True)
    else:
        print(f"logs and configs kept in {path}")
    return code
