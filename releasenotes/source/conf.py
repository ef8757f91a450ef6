"""Sphinx configuration of resize_sched's release notes (``tox -e releasenotes``).

The notes are YAML files under ``releasenotes/notes/`` (``reno new SLUG``
creates one); reno reads them from git history and renders them here, one
page per series. The same notes appear in the manual (``doc/release-notes.rst``).
"""

import os
import sys

# NOTE: the manual's Sphinx helpers (doc/_ext), for reno_untracked.
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "doc", "_ext")
)

project = "resize_sched Release Notes"
author = "the resize_sched authors"
copyright = "the resize_sched authors; Apache License 2.0"
# NOTE: release notes have no version of their own; each note is listed
# under the release that carries it.
version = ""
release = ""

extensions = ["reno.sphinxext", "reno_untracked"]

root_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []
