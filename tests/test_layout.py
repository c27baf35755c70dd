"""The package's shape: layers that only import down (the table below is every import between
them, and only those), no import cycle, a small top level, short modules, no folder named
like build output, and a design page that names every module and draws the layers as they are."""

from __future__ import annotations

import ast
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "video_tfrecords"
DESIGN = PACKAGE.parent / "docs" / "design.md"
MAX_TOP_LEVEL = 14
MAX_LINES = 400
# Each unit of the package (a top-level module, or a folder: its modules together) and the
# units it imports: every import between two units is here, and only those. Entry points first,
# then the layers from the top down; a unit imports only units below it.
LAYERS = {
    "__init__": {"video_tfrecords_dataset_builder", "ingest"},
    "spark_build": {"video_tfrecords_dataset_builder", "engines", "ingest", "config"},
    "decoders": {"video_tfrecords_dataset_builder", "records", "clips"},
    "input_pipeline": {"clip_source", "records", "clips"},
    "show": {"clip_source", "records", "clips", "util"},
    "clip_source": {"records", "clips"},
    "make_manifests": {"ingest"},
    "video_tfrecords_dataset_builder": {"engines", "ingest", "config", "records"},
    "engines": {"ingest"},
    "ingest": {"config", "records", "clips", "util"},
    "config": {"records", "clips", "util"},
    "records": {"clips", "util"},
    "clips": {"util"},
    "util": set(),
}
# Names that tools take for build output (.gitignore templates, linters, test collectors).
OUTPUT_NAMES = {"build", "dist", "out", "output", "target", "bin", "obj", "lib", "tmp", "temp"}


def module_names() -> dict[str, pathlib.Path]:
    """Dotted name -> file of every module of the package (a package by its __init__)."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(
    path: pathlib.Path, modules: dict[str, pathlib.Path], name: str | None = None
) -> set[str]:
    """The package's modules `path` imports anywhere: at module level, in functions, under
    TYPE_CHECKING, relative imports resolved against `name` (the module `path` is; by default
    its place in the package). `from a.b import c` is an import of a.b.c when c is a module,
    else of a.b."""
    if name is None and path.is_relative_to(PACKAGE):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    name = name or path.stem  # a file outside the package: no relative import resolves
    # The package a relative import starts from: the module itself if it is a package.
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                assert node.level <= len(up), f"{path}: a relative import above the package"
                base = ".".join([*up[: len(up) - node.level + 1], *filter(None, [base])])
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in modules else base)
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


def test_the_import_walker_sees_imports_in_functions_and_under_ifs(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import sys\n"
        "if sys:\n    import video_tfrecords.config\n"
        "def f():\n    from video_tfrecords.records import schema\n"
        "    from video_tfrecords.clips.spec import ClipSpec\n"
    )
    found = imports_of(source, module_names())
    assert found == {
        "video_tfrecords.config", "video_tfrecords.records.schema", "video_tfrecords.clips.spec"
    }


def unit_of(module: str) -> str:
    """The layer unit of a dotted module name: its top-level module or folder."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def unit_graph(graph: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    units = {}
    for module, imported in (graph or import_graph()).items():
        own = unit_of(module)
        units.setdefault(own, set()).update(unit_of(m) for m in imported if unit_of(m) != own)
    return units


def imports_off_the_table(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) units of every import between units that LAYERS does not list."""
    return {(a, b) for a, bs in unit_graph(graph).items() for b in bs if b not in LAYERS.get(a, ())}


def test_the_layer_table_is_every_import_between_units_and_only_those():
    assert unit_graph() == LAYERS


def test_an_upward_relative_import_is_caught(tmp_path):
    """A copy of clips/boxes.py that imports the engines relatively, read as the module it
    copies: an import of engines.local, off the table (clips imports only util)."""
    modules = module_names()
    copy = tmp_path / "boxes.py"
    copy.write_text(modules["video_tfrecords.clips.boxes"].read_text() + (
        "\n\ndef f():\n    from ..engines import local\n    from . import geometry\n"
        "    from .. import config\n    from ..records.schema import VIDEO\n"
    ))  # fmt: skip
    found = imports_of(copy, modules, "video_tfrecords.clips.boxes")
    assert {"video_tfrecords.engines.local", "video_tfrecords.clips.geometry",
            "video_tfrecords.config", "video_tfrecords.records.schema"} <= found  # fmt: skip
    graph = {**import_graph(), "video_tfrecords.clips.boxes": found}
    assert imports_off_the_table(graph) == {
        ("clips", "engines"), ("clips", "config"), ("clips", "records")
    }
    assert imports_off_the_table(import_graph()) == set()


def test_layers_only_import_down():
    order = list(LAYERS)
    assert cycles(LAYERS) == []
    up = {(a, b) for a, bs in LAYERS.items() for b in bs if order.index(b) < order.index(a)}
    assert up == set(), "a unit imports one listed above it"


def test_no_package_folder_takes_a_build_output_name():
    folders = {p.name for p in PACKAGE.rglob("*") if (p / "__init__.py").is_file()}
    assert folders & OUTPUT_NAMES == set()


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
    """(importer, imported) units of every arrow of design.md's Mermaid diagram, whose nodes are
    named by their unit (`records/`, `clip_source.py`) first in their label."""
    text = DESIGN.read_text(encoding="utf-8").split("```mermaid")[1].split("```")[0]
    units = {
        node: re.match(r"`?([a-z_]+)", label).group(1)
        for node, label in re.findall(r'(\w+)\["([^"]*)"\]', text)
    }
    edges = set()
    for line in text.splitlines():
        line = re.sub(r'\["[^"]*"\]', "", line)
        groups = [g.split("&") for g in line.split("-->")]
        for left, right in zip(groups, groups[1:]):
            edges.update((units[a.strip()], units[b.strip()]) for a in left for b in right)
    return edges


def test_the_design_diagram_draws_every_import_between_units_and_only_those():
    drawn = diagram_edges()
    assert drawn == {(a, b) for a, bs in LAYERS.items() if a != "__init__" for b in bs}
