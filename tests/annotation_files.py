"""Helpers of the make_manifests tests: annotation files and videos written, manifests read back.

A manifest is read here with json and plain string splitting, never with make_manifests' code.
"""

import json
import os


def touch(root, *names):
    """Empty files under `root` (the converter never opens a video); returns their paths."""
    paths = []
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
        paths.append(str(path))
    return paths


def write(root, files, newline="\n"):
    """Text files under `root`, UTF-8, with `newline` line ends; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_bytes(text.replace("\n", newline).encode())
    return root


def lines(out, name):
    return (out / name).read_text(encoding="utf-8").splitlines()


def jsonl(out, name) -> list[dict]:
    """The objects of a JSON Lines manifest: one a line, each with an absolute "path"."""
    objects = []
    for line in (out / name).read_bytes().decode("utf-8").split("\n")[:-1]:
        obj = json.loads(line)
        assert isinstance(obj, dict) and os.path.isabs(obj["path"]), line
        objects.append(obj)
    assert (out / name).read_bytes().endswith(b"\n")
    return objects


def by_path(objects) -> dict[str, dict]:
    """{path: the object without its path}; a path twice is a test failure."""
    result = {obj["path"]: {k: v for k, v in obj.items() if k != "path"} for obj in objects}
    assert len(result) == len(objects), "a path is there twice"
    return result


def assert_nothing_written(out):
    assert not out.exists() or sorted(os.listdir(out)) == []
