"""Sphinx helpers of the resize_sched manual.

``.. command-help:: resize-sched-manage placement heal``
    Runs the console script (as ``[project.scripts]`` in ``pyproject.toml``
    names it) with those arguments and ``--help``, from this checkout, and
    shows what it prints. The CLI reference is therefore always the code's
    own help; a command that fails makes the build fail. A line
    ``.. other-commands::`` becomes a section with the help of every console
    script that no ``command-help`` of the same page shows, so a script
    added to ``pyproject.toml`` is documented without editing the page.

Optional pages (``?name`` in a toctree, ``:optdoc:`` in the text)
    Some pages are written on other branches and may not be in a given
    checkout yet. In a toctree, a line ``?name`` is the entry ``name`` when
    ``name.rst`` exists and nothing otherwise; ``:optdoc:`name``` (or
    ``:optdoc:`Title <name>```) is a ``:doc:`` reference when the page
    exists and plain text naming the file otherwise. A page that is absent
    is not an error; one that is present is linked and checked as usual.
    A toctree line ``?*`` is every top-level page that no other toctree line
    of the same document names, so a page added on another branch is in the
    manual (and not an orphan) whatever its name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.roles import XRefRole
from sphinx.util import logging

LOG = logging.getLogger(__name__)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_OPTIONAL_ENTRY = re.compile(r"^(?P<indent>\s+)\?(?P<name>[\w./-]+|\*)\s*$")
_COMMAND_HELP = re.compile(r"^\.\. command-help:: (?P<script>\S+)")
#: A toctree entry naming a page (optional or not): an indented bare name.
_ENTRY = re.compile(r"^\s+\??(?P<name>[\w-]+)\s*$")
_EXPLICIT = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")


def _scripts() -> dict[str, str]:
    """Console script name to its ``module:function``, from pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["scripts"]


class CommandHelp(Directive):
    """Show a console script's ``--help``, run at build time."""

    required_arguments = 1
    optional_arguments = 10
    has_content = False

    def run(self) -> list[nodes.Node]:
        script, *args = self.arguments
        scripts = _scripts()
        if script not in scripts:
            raise self.error(f"{script} is not a console script of pyproject.toml")
        module, func = scripts[script].split(":")
        code = (
            "import sys\n"
            f"sys.argv[0] = {script!r}\n"
            f"from {module} import {func}\n"
            f"sys.exit({func}())\n"
        )
        env = dict(os.environ, COLUMNS="79", PYTHONPATH=ROOT, PYTHONWARNINGS="ignore")
        done = subprocess.run(
            [sys.executable, "-c", code, *args, "--help"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        if done.returncode != 0 or not done.stdout.strip():
            raise self.error(
                f"'{' '.join([script, *args])} --help' exited {done.returncode}: "
                f"{done.stderr.strip()[-2000:]}"
            )
        text = done.stdout.rstrip()
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


def _page_exists(app: Sphinx, name: str) -> bool:
    return any(
        os.path.isfile(os.path.join(app.srcdir, name + suffix))
        for suffix in app.config.source_suffix
    )


def _optional_entries(app: Sphinx, docname: str, source: list[str]) -> None:
    """Keep a toctree's ``?name`` line when ``name`` exists; expand ``?*``."""
    text = source[0].split("\n")
    named = {m["name"] for m in map(_ENTRY.match, text) if m is not None}
    suffixes = tuple(app.config.source_suffix)
    rest = sorted(
        os.path.splitext(f)[0]
        for f in os.listdir(app.srcdir)
        if f.endswith(suffixes) and os.path.splitext(f)[0] not in named | {docname}
    )
    shown = {m["script"] for m in map(_COMMAND_HELP.match, text) if m is not None}
    lines = []
    for line in text:
        match = _OPTIONAL_ENTRY.match(line)
        if line.strip() == ".. other-commands::":
            for script in sorted(set(_scripts()) - shown):
                lines += [script, "-" * len(script), "", f".. command-help:: {script}", ""]
        elif match is None:
            lines.append(line)
        elif match["name"] == "*":
            lines += [f"{match['indent']}{name}" for name in rest]
        elif _page_exists(app, match["name"]):
            lines.append(f"{match['indent']}{match['name']}")
    source[0] = "\n".join(lines)


def _optdoc_role(app: Sphinx) -> Any:
    doc_role = XRefRole(warn_dangling=True, innernodeclass=nodes.inline)

    def role(
        name: str,
        rawtext: str,
        text: str,
        lineno: int,
        inliner: Any,
        options: dict[str, Any] | None = None,
        content: list[str] | None = None,
    ) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        match = _EXPLICIT.match(text)
        target = match["target"] if match else text
        if _page_exists(app, target.lstrip("/")):
            return doc_role(
                "std:doc", rawtext, text, lineno, inliner, options or {}, content or []
            )
        title = match["title"] if match else target
        label = f"{title} (doc/{target.lstrip('/')}.rst, not part of this build)"
        return [nodes.emphasis(rawtext, label)], []

    return role


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("command-help", CommandHelp)
    app.connect("source-read", _optional_entries)
    app.add_role("optdoc", _optdoc_role(app))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
