"""Sphinx configuration of the resize_sched manual (``tox -e docs``).

The source root is ``doc/``; HTML goes to ``doc/build/html``. Every page is
written by hand except the references, which are generated while the manual
is built: the options (oslo.config's ``show-options``), the policy rules
(oslo.policy's ``show-policy``) and each console script's ``--help``
(``command-help`` in ``_ext/resize_sched_docs.py``). Nothing generated is
written into the source tree.
"""

import os
import sys

DOC = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOC)
# NOTE: this checkout's code first, so the references describe it and not
# another copy of resize_sched installed in the environment.
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(DOC, "_ext"))

from resize_sched.version import version_string  # noqa: E402

project = "resize_sched"
author = "the resize_sched authors"
copyright = "the resize_sched authors; Apache License 2.0"
release = version_string()
version = release

extensions = [
    "oslo_config.sphinxext",
    "oslo_policy.sphinxext",
    "reno.sphinxext",
    "reno_untracked",
    "resize_sched_docs",
]

root_doc = "index"
exclude_patterns = ["build", "_ext", "Thumbs.db", ".DS_Store"]
# NOTE: a page the ``.. show-options::`` directive writes refers to options of
# other projects' groups; those are plain text, not broken references.
nitpicky = False

html_theme = "alabaster"
html_title = f"resize_sched {release}"
html_theme_options = {
    "description": "A Nova-style conductor and scheduler with pluggable Placement claim "
    "strategies",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "body_max_width": "none",
}
html_static_path: list[str] = []
