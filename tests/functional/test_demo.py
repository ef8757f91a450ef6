"""``resize-sched-demo`` end to end: what it shows, and what it leaves on disk."""

import os
import subprocess
import sys
import tempfile

from resize_sched.cmd import demo


def _sections(out: str) -> dict[str, str]:
    """The output's numbered steps, by number."""
    parts: dict[str, str] = {}
    key = ""
    for line in out.splitlines():
        if line[:2] in ("1.", "2.", "3.", "4.") and not line.startswith(" "):
            key = line[0]
        elif line.startswith("How to read it"):
            key = ""
        if key:
            parts[key] = parts.get(key, "") + line + "\n"
    return parts


def _row(section: str, strategy: str) -> str:
    """The lines of one strategy in a step."""
    lines, mine = [], False
    for line in section.splitlines()[1:]:
        name = line[2:19].strip()
        if name:
            mine = name == strategy
        if mine:
            lines.append(line)
    # NOTE: one line, spaces collapsed: the output wraps at 100 columns.
    return " ".join(" ".join(lines).split())


def test_the_demo_shows_how_the_strategies_differ(tmp_path) -> None:
    # NOTE: in a process of its own, as a user runs it: the demo sets up
    # logging for its services, which must not leak into the test run.
    done = subprocess.run(
        [sys.executable, "-m", "resize_sched.cmd.demo"],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    # Nothing imports eventlet: oslo.service's deprecation warning is not shown.
    assert "Eventlet is deprecated" not in done.stderr, done.stderr
    # Nor any dependency's deprecation (dnspython's CryptographyDeprecationWarning...):
    # they go to the services' log at DEBUG (resize_sched.cmd.warnings_to_log).
    assert "DeprecationWarning" not in done.stdout + done.stderr, done.stdout + done.stderr
    # The output fits a 100-column terminal.
    wide = [line for line in out.splitlines() if len(line) > 100]
    assert wide == [], "\n".join(wide)
    steps = _sections(out)

    same = steps["1"]
    assert "NoValidHost (deferred) <- Nova bug 1790204" in _row(same, "legacy")
    # During VERIFY_RESIZE on the same host: new only, or max(old, new).
    assert "VCPU 2, MEMORY_MB 2048, DISK_GB 100" in _row(same, "drop_and_reclaim")
    assert "VCPU 2, MEMORY_MB 4096, DISK_GB 100" in _row(same, "max_flavor")
    # max_flavor's same-host claim: the server new, the migration the excess, one POST.
    assert "Placement requests: 3 (GET allocation_candidates, GET usages, POST allocations)" in (
        _row(same, "max_flavor")
    )

    fill = steps["2"]
    assert "revert REFUSED" in _row(fill, "drop_and_reclaim")
    assert "filler ACTIVE" in _row(fill, "drop_and_reclaim")
    assert "revert asked again: vm-a ACTIVE" in _row(fill, "drop_and_reclaim")
    assert "filler ERROR" in _row(fill, "max_flavor")
    assert "revert: vm-a ACTIVE with wide" in _row(fill, "max_flavor")
    assert "REFUSED" not in _row(fill, "max_flavor")

    other = steps["3"]
    for strategy in demo.STRATEGIES:
        row = _row(other, strategy)
        assert "(source) holds VCPU 1, MEMORY_MB 4096, DISK_GB 100" in row, row
    assert "Placement requests: 2 (GET allocation_candidates, POST allocations)" in (
        _row(other, "max_flavor")
    )
    pinned = steps["4"]
    assert "NoValidHost: the group allows only its full host" in _row(pinned, "legacy")
    for strategy in ("drop_and_reclaim", "max_flavor"):
        row = _row(pinned, strategy)
        assert "VERIFY_RESIZE in place" in row, row
        assert "holds VCPU 2, MEMORY_MB 2048, DISK_GB 100" in row, row
    assert "nothing retries" in " ".join(out.split())
    # Nothing of the demo's left behind (the embedded Placement's schema
    # template is the process's, removed when it exits).
    assert [n for n in os.listdir(tmp_path) if n.startswith("resize-sched-demo-")] == []


def test_keep_keeps_the_directory_and_says_where(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen = []

    def run(args, workdir):
        seen.append(workdir)
        open(os.path.join(workdir, "services.log"), "w").close()
        return 0

    monkeypatch.setattr(demo, "_run", run)
    assert demo.main(["--keep"]) == 0
    assert os.path.exists(os.path.join(seen[0], "services.log"))
    assert f"Kept {seen[0]}" in capsys.readouterr().out
    assert demo.main([]) == 0
    assert not os.path.exists(seen[1])
