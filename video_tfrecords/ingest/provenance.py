"""What a build is made from, written beside its dataset_info.json: how a rebuild knows that
the dataset it finds was built from the same inputs, and says what changed when it was not.

`collect` notes, cheaply, every input that decides the stored examples: each split's
manifest (its content hash, line count, and every video line: line, path, label, the resolved
file, that file's size and times and its content's fingerprint, `file_identity`), the class
names (and labels.txt's hash), the config's fields, the manual dir and the encoding's format.
A file that an earlier `built_from` (`previous`) found at the same path, size and times keeps
its fingerprint: one stat a video, and reads only of new, moved or changed files.
`write` puts it in `built_from.json` (plain JSON, one video a line: readable without
TensorFlow, or by eye), `read` (`records.built_from`'s, its one reader) gets it back, its
video lines by name. `changes.differences` compares two.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence

from etils import epath

from video_tfrecords.ingest import file_identity, manifest
from video_tfrecords.records.built_from import (
    FILE,
    VideoLine,
    read,  # noqa: F401  (the build reads it as ours)
    video_lines,
)
from video_tfrecords.util.paths import is_remote

# Of built_from.json's layout. 2: each video's ctime and content fingerprint (`file_identity`).
FORMAT = 2
# How the stored frames are made: a prepared dataset of another is stale. (Bump with a change
# of what a build stores for the same inputs, not with the cache's layout, cache.FORMAT.)
FRAMES_FORMAT = 5


class StaleDatasetError(RuntimeError):
    """A prepared dataset was built from other inputs than the build's; the message says which
    and how to go on. Raised before anything is decoded."""


def absolute(path: epath.PathLike) -> str:
    """A local path made absolute (and `~` expanded); a URL as it is."""
    path = os.fspath(path)
    return path if is_remote(path) else os.path.abspath(os.path.expanduser(path))


def resolve(manual_dir: str, path: str) -> str:
    """`manifest.resolve`, made absolute; for local paths with os.path (a build of 650k
    lines resolves each, and etils.epath's paths cost ~10x more)."""
    if is_remote(manual_dir) or is_remote(path):
        return str(manifest.resolve(manual_dir, path))
    return os.path.abspath(os.path.join(manual_dir, path))


def known_files(built_from: Mapping | None) -> dict[str, tuple]:
    """Resolved file -> (size, mtime, ctime, content) as `built_from` found each (none for one
    without content fingerprints, an earlier layout's)."""
    if not built_from or built_from.get("format", 1) < 2:
        return {}
    splits = built_from["splits"].values()
    return {v.file: v.identity for split in splits for v in video_lines(split)}


def files_by_path(built_from: Mapping) -> dict[str, dict[str, tuple]]:
    """Split -> video path as written -> (resolved file, size, mtime, ctime, content), as the
    `built_from` found it."""
    return {
        split: {v.path: (v.file, *v.identity) for v in video_lines(info)}
        for split, info in built_from["splits"].items()
    }


def _annotation(entry: manifest.Entry) -> dict | None:
    """A JSON Lines line's annotation as JSON gives it back (None for a text manifest's)."""
    if entry.annotation is None:
        return None
    fields = dataclasses.asdict(entry.annotation)
    fields["fields"] = sorted(fields["fields"])
    return json.loads(json.dumps(fields))


def _file_identity(path: epath.Path) -> dict:
    data = path.read_bytes()
    return {
        "file": str(path),
        "sha256": hashlib.sha256(data).hexdigest(),
        "lines": len(data.decode("utf-8").splitlines()),
    }


def config_fields(config) -> dict:
    """Every field of a VideoConfig (a dataclass), as JSON gives it back (tuples as lists)."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    fields["version"] = str(fields["version"]) if fields["version"] is not None else None
    fields.pop("supported_versions", None)
    return json.loads(json.dumps(fields, default=str))


def collect(
    manual_dir: epath.PathLike, dataset: manifest.Dataset, config, previous: Mapping | None = None
) -> dict:
    """The `built_from` of a build of `dataset` (read from `manual_dir`) under `config`: what
    makes its examples, a stat per video, and its content's fingerprint, from `previous` (an
    earlier `built_from`) for a file found as it found it, else read (`file_identity.identities`)."""
    folder = absolute(manual_dir)
    files = [resolve(folder, e.path) for entries in dataset.splits.values() for e in entries]
    found = iter(file_identity.identities(files, known_files(previous)))
    manual_dir = epath.Path(manual_dir)
    splits = {}
    for split, entries in dataset.splits.items():
        file = _file_identity(epath.Path(entries[0].manifest))
        videos = [
            list(VideoLine(e.line, e.path, e.label, _annotation(e), *next(found))) for e in entries
        ]
        splits[split] = {**file, "videos": videos}
    labels_path = manual_dir / manifest.LABELS_FILE
    return {
        "format": FORMAT,
        "encoding_format": FRAMES_FORMAT,
        "manual_dir": folder,
        "config": config_fields(config),
        "labels_file": _file_identity(labels_path) if labels_path.exists() else None,
        "class_names": list(dataset.class_names),
        "splits": splits,
    }


def write(folder: epath.PathLike, built_from: Mapping) -> None:
    """Writes `built_from` as folder/built_from.json: the top level indented, one video a line."""
    parts = ["{"]
    for i, (key, value) in enumerate(built_from.items()):
        end = "," if i + 1 < len(built_from) else ""
        if key != "splits":
            parts.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{end}")
            continue
        parts.append('  "splits": {')
        for j, (split, info) in enumerate(value.items()):
            head = {k: v for k, v in info.items() if k != "videos"}
            videos = ",\n".join(
                "      " + json.dumps(v, ensure_ascii=False) for v in info["videos"]
            )
            split_end = "," if j + 1 < len(value) else ""
            parts.append(
                f"    {json.dumps(split)}: {json.dumps(head, ensure_ascii=False)[:-1]}, "
                f'"videos": [\n{videos}\n    ]}}{split_end}'
            )
        parts.append("  }" + end)
    parts.append("}\n")
    temporary = epath.Path(folder) / f"{FILE}.partial"
    temporary.write_text("\n".join(parts), encoding="utf-8")
    temporary.replace(epath.Path(folder) / FILE)


# -- what a build tells its user -------------------------------------------------------------


def stale_message(dataset: str, folder: str, changes: Sequence[str], ways: Mapping) -> str:
    """The refusal: which dataset, what changed, and the two ways on, in the engine's words
    (`ways`: "overwrite", "data_dir", "config": how to rebuild, and to build elsewhere)."""
    listed = "\n".join(f"  - {change}" for change in changes)
    return (
        f"{dataset} ({folder}) was built from other inputs; nothing was decoded or changed. "
        f"What differs from its {FILE}:\n{listed}\n"
        f"To rebuild it from these inputs, run the same build with {ways['overwrite']} (it "
        f"encodes only the new and changed videos, if its encoding cache was kept). To keep "
        f"both, build into another {ways['data_dir']}, or under another config name "
        f"({ways['config']})."
    )


def ways_on(engine: str, config_name: str) -> dict:
    """How a user of `engine` ("tfds": the command, "python": download_and_prepare, "spark":
    spark_build) rebuilds a dataset, or builds it elsewhere: for `stale_message`."""
    name = f"{config_name}_2"
    if engine == "python":
        return {
            "overwrite": "download_config=tfds.download.DownloadConfig(download_mode="
            "tfds.GenerateMode.FORCE_REDOWNLOAD)",
            "data_dir": "data_dir",
            "config": f"VideoConfig(name={name!r}, ...)",
        }
    overwrite = "--overwrite" + (" (build(..., overwrite=True))" if engine == "spark" else "")
    config = f"""--config '{{"name": "{name}", ...}}'"""
    return {"overwrite": overwrite, "data_dir": "--data_dir", "config": config}


def up_to_date_line(dataset: str, folder: str, examples: int) -> str:
    """The one line of a build that finds its dataset already built from the same inputs."""
    return f"{dataset} is up to date ({examples:,} examples), nothing to build: {folder}"


def unknown_line(dataset: str, folder: str, overwrite: str) -> str:
    """The warning of a build that finds a dataset without one (built before they were
    kept): reused, as it cannot be compared."""
    return (
        f"WARNING: {dataset} in {folder} has no {FILE} (built before video_tfrecords recorded "
        f"what a build is made from): reused as it is, unchecked. To rebuild it from these "
        f"inputs, run the same build with {overwrite}."
    )
