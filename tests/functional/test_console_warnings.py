"""The console scripts keep third-party deprecation warnings off the operator's console.

A console script is run in a process of its own, as an operator runs it
(``resize-sched-compute``: without a Placement it stops right after setting
up logging). A dependency's deprecation warning, raised at import time
before logging exists, must not reach stderr and must reach the log at
DEBUG; a dependency's other warnings are shown as before.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from resize_sched.cmd import warnings_to_log

ROOT = Path(__file__).resolve().parents[2]
#: What the console script's wrapper runs, with a dependency imported the
#: way a command's imports bring one in (after resize_sched.cmd).
SCRIPT = textwrap.dedent(
    """
    import sys
    import resize_sched.cmd
    import noisy_dependency
    from resize_sched.cmd.compute import main
    sys.exit(main())
    """
)
NOISY = textwrap.dedent(
    """
    import warnings

    class NoisyDeprecationWarning(UserWarning):
        pass

    warnings.warn("noisy_dependency's old API is deprecated", NoisyDeprecationWarning)
    warnings.warn("noisy_dependency's pending change", PendingDeprecationWarning)
    warnings.warn("noisy_dependency has a real problem", RuntimeWarning)
    """
)


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "noisy_dependency.py").write_text(NOISY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, "-W", "default::PendingDeprecationWarning", "-c", SCRIPT, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_dependencys_deprecations_go_to_the_debug_log_not_the_console(tmp_path) -> None:
    log = tmp_path / "compute.log"
    done = _run(tmp_path, "--debug", "--log-file", str(log))
    assert done.returncode == 1, done.stderr  # no Placement: it stops after logging is set up
    console = done.stdout + done.stderr
    assert "DeprecationWarning" not in console, console
    assert "deprecated" not in console and "pending change" not in console, console
    # Not a deprecation: shown as Python shows it.
    assert "RuntimeWarning: noisy_dependency has a real problem" in done.stderr
    logged = log.read_text()
    assert (
        "DEBUG py.warnings [-] NoisyDeprecationWarning: noisy_dependency's old API is deprecated"
        in logged
    ), logged
    assert "PendingDeprecationWarning: noisy_dependency's pending change" in logged


def test_without_debug_the_deprecations_are_nowhere(tmp_path) -> None:
    log = tmp_path / "compute.log"
    done = _run(tmp_path, "--log-file", str(log))
    assert done.returncode == 1, done.stderr
    assert "DeprecationWarning" not in done.stdout + done.stderr + log.read_text()


def test_a_deprecation_resize_sched_raises_itself_is_shown_as_before(monkeypatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr(warnings_to_log, "_previous", lambda message, *rest: shown.append(message))
    ours = str(ROOT / "resize_sched" / "words" / "base.py")
    warnings_to_log._show("ours", DeprecationWarning, ours, 1)
    theirs = str(ROOT.parent / "site-packages" / "dep.py")
    monkeypatch.setattr(warnings_to_log, "_held", [])
    warnings_to_log._show("theirs", DeprecationWarning, theirs, 1)
    assert shown == ["ours"]


@pytest.mark.parametrize(
    ("category", "routed"),
    [
        (DeprecationWarning, True),
        (PendingDeprecationWarning, True),
        (type("CryptographyDeprecationWarning", (UserWarning,), {}), True),
        (UserWarning, False),
        (RuntimeWarning, False),
    ],
)
def test_what_counts_as_a_deprecation(category, routed) -> None:
    assert warnings_to_log.is_deprecation(category) is routed
