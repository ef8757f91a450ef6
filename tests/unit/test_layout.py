"""The house rules a newcomer relies on (doc/architecture.rst, "The layout"):
no module of the package or the benchmarks over 500 lines, no import circle
(imports made only for type checking included), and every module opens with
a docstring whose first line says its job."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "resize_sched"
MAX_LINES = 500

#: Modules allowed past MAX_LINES, each with the reason (doc/architecture.rst).
LONG_ALLOWED: dict[str, str] = {}


def _modules(top: pathlib.Path) -> list[pathlib.Path]:
    # Alembic revisions are history, written once and never edited.
    return sorted(p for p in top.rglob("*.py") if "migrations/versions" not in p.as_posix())


def _name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules(PACKAGE) + _modules(ROOT / "benchmarks")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
        and str(p.relative_to(ROOT)) not in LONG_ALLOWED
    }
    assert long == {}, f"split these along a seam (or say why not in LONG_ALLOWED): {long}"


def _imports(path: pathlib.Path, known: set[str]) -> set[str]:
    """The package's modules ``path`` imports, at any depth of the file."""
    name = _name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [resolve(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else resolve(base)
                for alias in node.names
            ]
        else:
            continue
        found.update(t for t in targets if t and t != name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    paths = _modules(PACKAGE)
    known = {_name(p) for p in paths}
    graph = {_name(p): _imports(p, known) for p in paths}
    assert _cycles(graph) == []


@pytest.mark.parametrize("path", _modules(PACKAGE), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_says_its_job_first(path: pathlib.Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text()))
    if path.name == "__init__.py" and not path.read_text().strip():
        pytest.skip("an empty package marker")
    assert docstring, f"{path.relative_to(ROOT)} has no docstring"
    assert len(docstring.splitlines()[0]) > 10, "the first line should say the module's job"
