"""``doc/_ext/reno_untracked.py``: the note files reno would leave out are named.

reno reads release notes from git, so a note file nobody has added is
silently missing from the built notes; the extension lists those files (the
build then warns, an error under ``-W``). Checked on a small git repository.
"""

import pathlib
import subprocess
import sys

import pytest

EXT = pathlib.Path(__file__).resolve().parents[2] / "doc" / "_ext"


@pytest.fixture
def reno_untracked(monkeypatch):
    pytest.importorskip("sphinx")
    monkeypatch.syspath_prepend(str(EXT))
    sys.modules.pop("reno_untracked", None)
    import reno_untracked

    return reno_untracked


def _git(cwd: pathlib.Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_only_notes_git_does_not_track_are_listed(reno_untracked, tmp_path) -> None:
    notes = tmp_path / "releasenotes" / "notes"
    notes.mkdir(parents=True)
    _git(tmp_path, "init", "-q")
    (notes / "committed-0000000000000001.yaml").write_text("---\nfixes:\n  - x\n")
    (notes / "staged-0000000000000002.yaml").write_text("---\nfixes:\n  - x\n")
    _git(tmp_path, "add", "releasenotes/notes/committed-0000000000000001.yaml")
    _git(tmp_path, "commit", "-q", "-m", "one note")
    _git(tmp_path, "add", "releasenotes/notes/staged-0000000000000002.yaml")
    (notes / "new-0000000000000003.yaml").write_text("---\nfixes:\n  - x\n")
    (notes / "README.txt").write_text("not a note")

    assert reno_untracked.untracked_notes(str(tmp_path)) == [
        "releasenotes/notes/new-0000000000000003.yaml"
    ]
    _git(tmp_path, "add", "releasenotes/notes/new-0000000000000003.yaml")
    assert reno_untracked.untracked_notes(str(tmp_path)) == []


def test_outside_a_checkout_nothing_is_said(reno_untracked, tmp_path) -> None:
    assert reno_untracked.untracked_notes(str(tmp_path)) is None
