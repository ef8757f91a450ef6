"""Warn about release notes reno will not read (loaded by both Sphinx builds).

reno reads ``releasenotes/notes/`` from git: a note committed or staged is
listed, a note file that git does not track yet is left out without a word.
This extension lists the untracked ones when the build starts and warns
about each (an error under ``-W``), naming the ``git add`` that fixes it.
Outside a git checkout (an unpacked sdist) it says nothing.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

LOG = logging.getLogger(__name__)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTES = os.path.join("releasenotes", "notes")


def untracked_notes(root: str = ROOT) -> list[str] | None:
    """The note files under ``releasenotes/notes`` git does not track, or None
    when ``root`` is not a git checkout (or git is missing)."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "--", NOTES],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return sorted(p for p in done.stdout.splitlines() if p.endswith((".yaml", ".yml")))


def _check(app: Sphinx) -> None:
    for path in untracked_notes() or []:
        LOG.warning(
            "%s is not tracked by git, so reno leaves it out of the release notes: "
            "'git add %s' (staged is enough)",
            path,
            path,
        )


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
