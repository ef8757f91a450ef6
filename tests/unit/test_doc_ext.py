"""The manual's Sphinx helpers (``doc/_ext/resize_sched_docs.py``), on a small
project built with warnings as errors: pages written on other branches are
linked when present and no error when absent, a page nobody lists is still
in the manual, and a console script's help is its real output.

The whole manual is built by ``tox -e docs``; these need Sphinx (the ``doc``
extra) and are skipped without it. One small build, kept to one for time; the
``.. other-commands::`` line is exercised by the manual's CLI reference.
"""

import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("sphinx")

EXT = pathlib.Path(__file__).resolve().parents[2] / "doc" / "_ext"


def _build(tmp_path: pathlib.Path, pages: dict[str, str]) -> tuple[int, str, pathlib.Path]:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['resize_sched_docs']\nproject = 't'\n"
    )
    for name, text in pages.items():
        (src / f"{name}.rst").write_text(textwrap.dedent(text))
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stderr, out


def _page(title: str, body: str = "") -> str:
    return f"{title}\n{'=' * len(title)}\n\n{body}\n"


INDEX = _page(
    "Index",
    """\
    See :optdoc:`the simulation <simulation>` and :optdoc:`demo`.

    .. toctree::

       guide
       ?simulation
       ?demo

    .. toctree::
       :caption: More

       ?*
    """,
)


def test_optional_pages_unlisted_pages_and_command_help(tmp_path):
    """One build (each costs seconds): ``simulation`` is absent, ``demo``
    present, ``zz-new`` listed nowhere; the CLI help is run for real."""
    pages = {
        "index": INDEX,
        "guide": _page("Guide", ".. command-help:: resize-sched-manage placement audit\n"),
        "demo": _page("Demo"),
        "zz-new": _page("New"),
    }
    code, err, out = _build(tmp_path, pages)
    assert code == 0, err
    html = (out / "index.html").read_text()
    assert "the simulation (doc/simulation.rst, not part of this build)" in html
    assert 'href="simulation.html"' not in html
    assert html.count('href="demo.html"') >= 2  # the toctree and the reference
    assert 'href="guide.html"' in html and 'href="zz-new.html"' in html
    guide = (out / "guide.html").read_text()
    assert "usage: resize-sched-manage placement audit" in guide
    assert "--delete" in guide
