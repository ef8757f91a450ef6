"""The checked-in sample config must match what the options generate."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "etc" / "resize_sched" / "resize_sched.conf.sample"
GENERATOR_CONF = ROOT / "etc" / "resize_sched" / "resize_sched-config-generator.conf"


def test_sample_config_is_current(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "fresh.conf.sample"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "oslo_config.generator",
            "--config-file",
            str(GENERATOR_CONF),
            "--output-file",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    if out.read_text() != SAMPLE.read_text():
        pytest.fail(
            f"{SAMPLE.relative_to(ROOT)} is out of date: run 'tox -e genconfig' "
            "and commit the result."
        )


def test_sample_config_documents_every_group() -> None:
    text = SAMPLE.read_text()
    for group in (
        "[DEFAULT]",
        "[database]",
        "[placement]",
        "[resize]",
        "[scheduler]",
        "[conductor]",
        "[api]",
        "[upgrade_levels]",
    ):
        assert group in text, group
    assert "#claim_strategy = max_flavor" in text
    assert "#max_attempts = 3" in text
