"""``resize-sched-simulate`` as a user runs it: a process of its own, what it writes to stderr."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def test_no_eventlet_warning_on_stderr() -> None:
    # NOTE: the smallest run that still imports everything a default run does.
    args = ["--hosts", "2", "--resizes", "1", "--seeds", "1", "--utilisation", "0.5"]
    done = subprocess.run(
        [sys.executable, "-m", "resize_sched.cmd.simulate", *args, "--quiet"],
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "max_flavor" in done.stdout
    assert "Eventlet is deprecated" not in done.stderr, done.stderr
    assert "eventlet" not in done.stderr.lower(), done.stderr
