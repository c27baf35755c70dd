"""The package's shape: no import cycle, a small top level, short modules, a design page that
names every module (and only modules that exist)."""

from __future__ import annotations

import ast
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "video_tfrecords"
DESIGN = PACKAGE.parent / "docs" / "design.md"
MAX_TOP_LEVEL = 12
MAX_LINES = 400


def module_names() -> dict[str, pathlib.Path]:
    """Dotted name -> file of every module of the package (a package by its __init__)."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    """The package's modules `path` imports anywhere: at module level, in functions, under
    TYPE_CHECKING. `from a.b import c` is an import of a.b.c when c is a module, else of a.b."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in modules else node.module)
    return {name for name in found if name in modules}


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, or a module importing itself."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
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
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["e"]]


def test_the_import_walker_sees_function_level_imports():
    graph = import_graph()
    # encoding imports parallel inside a function only.
    assert "video_tfrecords.build.parallel" in graph["video_tfrecords.build.encoding"]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_numpy_path_never_imports_the_tf_decoder():
    graph = import_graph()
    reached, todo = set(), ["video_tfrecords.clip_source"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    assert "video_tfrecords.clips.decode_tf" not in reached
    assert "video_tfrecords.clips.decode_np" in reached


def test_a_small_top_level():
    entries = [
        p.name for p in PACKAGE.iterdir()
        if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())
    ]
    assert len(entries) <= MAX_TOP_LEVEL, sorted(entries)


def test_no_module_over_400_lines():
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_design_names_every_module_and_only_modules_that_exist():
    text = DESIGN.read_text(encoding="utf-8")
    named = {
        name for name in re.findall(r"`([a-z0-9_]+(?:/[a-z0-9_]+)*\.py)`", text)
        if not name.startswith(("tests/", "benchmarks/", "examples/"))
    }
    files = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
    }
    assert files - named == set(), "modules design.md does not name"
    assert named - files == set(), "files design.md names that do not exist"


def diagram_edges() -> set[tuple[str, str]]:
    """(importer, imported) module names of every arrow of design.md's Mermaid diagram."""
    text = DESIGN.read_text(encoding="utf-8").split("```mermaid")[1].split("```")[0]
    files = {}  # node id -> the module its label names first (its own folder when unnamed)
    folder = ""
    for line in text.splitlines():
        if line.strip().startswith("subgraph"):
            folder = line.split()[1].split("[")[0] + "."
            continue
        if line.strip() == "end":
            folder = ""
        for node, label in re.findall(r'(\w+)\["([^"]*)"\]', line):
            name = re.search(r"([a-z0-9_]+)\.py", label).group(1)
            files[node] = f"video_tfrecords.{folder}{name}"
    edges = set()
    for line in text.splitlines():
        if line.strip().startswith("subgraph"):
            continue
        line = re.sub(r'\["[^"]*"\]', "", line)
        groups = [g.split("&") for g in line.split("-->")]
        for left, right in zip(groups, groups[1:]):
            edges.update((files[a.strip()], files[b.strip()]) for a in left for b in right)
    return edges


def test_every_arrow_of_the_design_diagram_is_an_import():
    graph = import_graph()
    edges = diagram_edges()
    assert len(edges) > 20
    assert {(a, b) for a, b in edges if b not in graph[a]} == set()
