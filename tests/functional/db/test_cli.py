"""``resize-sched-manage db sync`` / ``db version``, run as a real process."""

import pathlib
import subprocess
import sys

import pytest

from resize_sched.db import migration

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _manage(conf_file: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "resize_sched.cmd.manage", "--config-file", str(conf_file), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def _conf(tmp_path: pathlib.Path, url: str) -> pathlib.Path:
    path = tmp_path / "resize_sched.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n\n[database]\nconnection = {url}\n")
    return path


def test_sync_and_version(empty_url: str, tmp_path: pathlib.Path) -> None:
    conf = _conf(tmp_path, empty_url)
    head = migration.head_revision()

    result = _manage(conf, "db", "version")
    assert (result.returncode, result.stdout) == (0, "None\n"), result.stderr
    assert "db sync" in result.stderr

    result = _manage(conf, "db", "sync")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Database upgraded from an empty schema to revision {head}.\n"

    result = _manage(conf, "db", "sync")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Database is already at revision {head}; nothing to do.\n"

    result = _manage(conf, "db", "version")
    assert (result.returncode, result.stdout) == (0, f"{head}\n"), result.stderr


def test_default_sqlite_path_is_created(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "resize_sched.conf"
    state = tmp_path / "not" / "yet"
    conf.write_text(f"[DEFAULT]\nstate_path = {state}\n")
    result = _manage(conf, "db", "sync")
    assert result.returncode == 0, result.stderr
    assert (state / "resize_sched.sqlite").is_file()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mysql+pymysql://root:s3cret@127.0.0.1:1/x", "Can't connect"),
        ("not a url", "Could not parse"),
    ],
)
def test_errors_are_one_line(tmp_path: pathlib.Path, url: str, expected: str) -> None:
    result = _manage(_conf(tmp_path, url), "db", "version")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("resize-sched-manage: error: ")
    assert expected in lines[0]
    assert "s3cret" not in result.stderr


def test_unknown_revision(tmp_path: pathlib.Path) -> None:
    result = _manage(_conf(tmp_path, f"sqlite:///{tmp_path}/x.sqlite"), "db", "sync", "9999")
    assert result.returncode == 1
    assert "Can't locate revision identified by '9999'" in result.stderr


def test_help_and_usage(tmp_path: pathlib.Path) -> None:
    conf = _conf(tmp_path, f"sqlite:///{tmp_path}/x.sqlite")
    result = _manage(conf, "--help")
    assert result.returncode == 0
    assert "db sync" in result.stdout and "Command categories" in result.stdout
    result = _manage(conf, "db", "--help")
    assert result.returncode == 0
    assert "sync" in result.stdout and "version" in result.stdout
    result = _manage(conf, "db")
    assert result.returncode == 1
    assert "required" in result.stderr
