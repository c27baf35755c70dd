"""What a build is made from, written beside its dataset_info.json: how a rebuild knows that
the dataset it finds was built from the same inputs, and says what changed when it was not.

`collect` records, cheaply (one stat a video, no decoding), every input that decides the
stored examples: each split's manifest (its content hash, line count, and every video line:
line, path, label, the resolved file and that file's size and modification time), the class
names (and labels.txt's hash), the config's fields, the manual dir and the encoding's format.
`write` puts it in `built_from.json` (plain JSON, one video a line: readable without
TensorFlow, or by eye), `read` gets it back, `differences` compares two records in words:
per manifest the lines added, removed and relabelled and the video files replaced, each as
`FILE:LINE`; config fields `old -> new`; another manual dir. Two records without a difference
build the same dataset: a reordered manifest, comments and `num_workers` change nothing.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from etils import epath

from video_tfrecords.ingest import cache, manifest
from video_tfrecords.records import dataset_files
from video_tfrecords.util.paths import is_remote

FILE = dataset_files.BUILT_FROM
FORMAT = 1  # of this record's layout
# Config fields that change how a build runs, not what it writes: never a reason to rebuild.
RUN_FIELDS = ("num_workers", "keep_cache")
# tfds.core.BuilderConfig's own fields: the folder's name and version, and words about it.
BASE_FIELDS = ("name", "version", "release_notes", "supported_versions", "description", "tags")
FEW = 5  # examples of each kind of change a message shows
STAT_THREADS = 32
PROBE, SLOW_STAT = 256, 50e-6  # files stat'ed first; seconds a stat that makes threads pay
# A manifest line's fields in the record, in order (annotation: a JSON Lines line's other keys).
VIDEO = ("line", "path", "label", "annotation", "file", "size", "mtime")


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


def identity(path: str) -> tuple[str, int | None, float | None]:
    """`cache.file_identity` of a video file, with size and time None when it cannot be found."""
    try:
        return cache.file_identity(path)
    except OSError:
        return path, None, None


def identities(files: Sequence[str]) -> list[tuple]:
    """`identity` of each file: in this thread while they answer fast (a local disk, where
    threads would only contend for the GIL: 7x the CPU for 650k files), in STAT_THREADS
    threads once they do not (a network file system answers in parallel)."""
    start, probe = time.perf_counter(), [identity(file) for file in files[:PROBE]]
    rest = files[PROBE:]
    if not rest or (time.perf_counter() - start) / len(probe) < SLOW_STAT:
        return probe + [identity(file) for file in rest]
    chunks = [rest[i : i + 2048] for i in range(0, len(rest), 2048)]
    with ThreadPoolExecutor(STAT_THREADS) as pool:
        found = pool.map(lambda chunk: [identity(file) for file in chunk], chunks)
        return probe + [one for chunk in found for one in chunk]


def files_by_path(record: Mapping) -> dict[str, dict[str, tuple]]:
    """Split -> video path as written -> (resolved file, size, mtime), as the record found it."""
    return {
        split: {v[1]: tuple(v[4:]) for v in info["videos"]}
        for split, info in record["splits"].items()
    }


def _annotation(entry: manifest.Entry) -> dict | None:
    """A JSON Lines line's annotation as JSON gives it back (None for a text manifest's)."""
    if entry.annotation is None:
        return None
    fields = dataclasses.asdict(entry.annotation)
    fields["fields"] = sorted(fields["fields"])
    return json.loads(json.dumps(fields))


def _file_record(path: epath.Path) -> dict:
    data = path.read_bytes()
    return {
        "file": str(path),
        "sha256": hashlib.sha256(data).hexdigest(),
        "lines": len(data.decode("utf-8").splitlines()),
    }


def config_record(config) -> dict:
    """Every field of a VideoConfig (a dataclass), as JSON gives it back (tuples as lists)."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    fields["version"] = str(fields["version"]) if fields["version"] is not None else None
    fields.pop("supported_versions", None)
    return json.loads(json.dumps(fields, default=str))


def collect(manual_dir: epath.PathLike, dataset: manifest.Dataset, config) -> dict:
    """The record of what a build of `dataset` (read from `manual_dir`) under `config` makes its
    examples from; one stat per video, in threads."""
    folder = absolute(manual_dir)
    files = [resolve(folder, e.path) for entries in dataset.splits.values() for e in entries]
    found = iter(identities(files))
    manual_dir = epath.Path(manual_dir)
    splits = {}
    for split, entries in dataset.splits.items():
        file = _file_record(epath.Path(entries[0].manifest))
        videos = [[e.line, e.path, e.label, _annotation(e), *next(found)] for e in entries]
        splits[split] = {**file, "videos": videos}
    labels_path = manual_dir / manifest.LABELS_FILE
    return {
        "format": FORMAT,
        "encoding_format": cache.FORMAT,
        "manual_dir": folder,
        "config": config_record(config),
        "labels_file": _file_record(labels_path) if labels_path.exists() else None,
        "class_names": list(dataset.class_names),
        "splits": splits,
    }


def write(folder: epath.PathLike, record: Mapping) -> None:
    """Writes `record` as folder/built_from.json: the top level indented, one video a line."""
    parts = ["{"]
    for i, (key, value) in enumerate(record.items()):
        end = "," if i + 1 < len(record) else ""
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


def read(folder: epath.PathLike) -> dict | None:
    """The record of the dataset in `folder`, or None if it has none (built before records
    were kept, or by other means)."""
    path = epath.Path(folder) / FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


# -- comparing two records -------------------------------------------------------------------


def differences(old: Mapping, new: Mapping, few: int = FEW) -> list[str]:
    """What differs between the inputs of `old` and `new` that changes the examples, one line
    (or a few) per kind of change, `few` examples of each; empty when a build of `new` would
    write what `old`'s build wrote."""
    lines = []
    if old["encoding_format"] != new["encoding_format"]:
        lines.append(
            f"the encoding's format: {old['encoding_format']} -> {new['encoding_format']} (this "
            "video_tfrecords stores frames differently)"
        )
    if old["manual_dir"] != new["manual_dir"]:
        lines.append(f"another manual dir: {old['manual_dir']} -> {new['manual_dir']}")
    fields = _config_changes(old["config"], new["config"])
    if fields:
        lines.append(f"config {new['config']['name']!r}: {'; '.join(fields)}")
    if old["class_names"] != new["class_names"]:
        lines.append(_class_change(old["class_names"], new["class_names"], few))
    for split in dict.fromkeys([*new["splits"], *old["splits"]]):
        lines += _split_changes(split, old["splits"].get(split), new["splits"].get(split), few)
    return lines


def _config_changes(old: Mapping, new: Mapping) -> list[str]:
    ignored = set(BASE_FIELDS) | set(RUN_FIELDS)
    names = [n for n in new if n not in ignored] + [n for n in old if n not in new]
    return [
        f"{name} {_value(old.get(name))} -> {_value(new.get(name))}"
        for name in dict.fromkeys(names)
        if name not in ignored and old.get(name) != new.get(name)
    ]


def _value(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _class_change(old: list[str], new: list[str], few: int) -> str:
    changed = [
        f"id {i}: {_name(old, i)} -> {_name(new, i)}"
        for i in range(max(len(old), len(new)))
        if _name(old, i) != _name(new, i)
    ]
    return (
        f"class names ({len(old)} -> {len(new)} classes): "
        + ", ".join(changed[:few])
        + (f", ... ({len(changed)} ids)" if len(changed) > few else "")
    )


def _name(names: list[str], i: int) -> str:
    return repr(names[i]) if i < len(names) else "none"


def _split_changes(split: str, old: Mapping | None, new: Mapping | None, few: int) -> list[str]:
    """A split's changes: its manifest's lines added, removed and changed (another label or
    annotation, for a video named by one line each side), its videos' files replaced. Lines
    are compared by content, not number: a reordered manifest is no change."""
    if old is None:
        return [f"split {split}: a new manifest, {new['file']} ({_count(new['videos'], 'line')})"]
    if new is None:
        gone = f"{old['file']}, {_count(old['videos'], 'line')}"
        return [f"split {split}: no manifest now (it was {gone})"]
    if old["videos"] == new["videos"] and old["file"] == new["file"]:
        return []  # the usual case, at C speed (a 650k-line split: 0.1 s, not 10)
    before = [dict(zip(VIDEO, v)) for v in old["videos"]]
    after = [dict(zip(VIDEO, v)) for v in new["videos"]]
    added, removed = _unmatched(after, before), _unmatched(before, after)
    here = lambda video: f"{new['file']}:{video['line']}"
    by_path = lambda videos: collections.Counter(v["path"] for v in videos)
    once = {p for p, n in by_path(added).items() if n == 1 and by_path(removed)[p] == 1}
    was = {v["path"]: v for v in removed if v["path"] in once}
    changed = [f"{here(v)}: {v['path']}: {_line_change(was[v['path']], v)}"
               for v in added if v["path"] in once]  # fmt: skip
    added = [f"{here(v)}: {v['path']}" for v in added if v["path"] not in once]
    removed = [f"{old['file']}:{v['line']}: {v['path']}" for v in removed if v["path"] not in once]
    files_before = {v["path"]: v for v in before}
    replaced = [
        f"{here(v)}: {path}: {change}"
        for path, v in {v["path"]: v for v in after}.items()
        if path in files_before and (change := _file_change(files_before[path], v))
    ]
    name = os.path.basename(new["file"])
    kinds = (("added", added), ("removed (as the build had them)", removed), ("changed", changed))
    lines = [
        f"{name}: {_count(items, 'line')} {kind}: {_few(items, few)}"
        for kind, items in kinds
        if items
    ]
    if replaced:
        lines.append(f"{name}: {_count(replaced, 'video file')} changed: {_few(replaced, few)}")
    return lines


def _unmatched(lines: list[dict], others: list[dict]) -> list[dict]:
    """The lines of `lines` whose content (path, label, annotation) `others` does not have as
    many times."""
    content = lambda v: (
        v["path"],
        v["label"],
        v["annotation"] and json.dumps(v["annotation"], sort_keys=True),
    )
    counts = collections.Counter(map(content, others))
    unmatched = []
    for line in lines:
        if counts[content(line)] > 0:
            counts[content(line)] -= 1
        else:
            unmatched.append(line)
    return unmatched


def _line_change(was: Mapping, now: Mapping) -> str:
    """How one video's line differs: its label, else its annotation (JSON Lines' keys)."""
    if was["label"] != now["label"]:
        return f"label {was['label']} -> {now['label']}"
    keys = sorted(k for k in {**(was["annotation"] or {}), **(now["annotation"] or {})}
                  if (was["annotation"] or {}).get(k) != (now["annotation"] or {}).get(k))  # fmt: skip
    return f"another {', '.join(keys) or 'annotation'}"


def _file_change(was: Mapping, now: Mapping) -> str | None:
    """How a video's file differs, in words; None when it is the same file."""
    if was["file"] != now["file"]:
        return f"another file, {was['file']} -> {now['file']}"
    if was["size"] is None or now["size"] is None:
        if was["size"] == now["size"]:
            return None
        return "found now (missing before)" if was["size"] is None else "missing now"
    parts = []
    if was["size"] != now["size"]:
        parts.append(f"{was['size']:,} -> {now['size']:,} bytes")
    if was["mtime"] != now["mtime"]:
        parts.append(f"modified {_when(was['mtime'])} -> {_when(now['mtime'])}")
    return ", ".join(parts) or None


def _when(mtime: float) -> str:
    """A modification time (ns as os.stat gives it, or seconds as epath's stat) in UTC."""
    seconds = mtime / 1e9 if isinstance(mtime, int) and mtime > 1e12 else mtime
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.isoformat(sep=" ", timespec="milliseconds").replace("+00:00", " UTC")


def _count(items: Sequence, what: str) -> str:
    return f"{len(items)} {what}{'' if len(items) == 1 else 's'}"


def _few(items: Sequence[str], few: int) -> str:
    more = f"; ... and {len(items) - few} more" if len(items) > few else ""
    return "; ".join(items[:few]) + more


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
    """The warning of a build that finds a dataset without a record (built before records were
    kept): reused, as it cannot be compared."""
    return (
        f"WARNING: {dataset} in {folder} has no {FILE} (built before video_tfrecords recorded "
        f"what a build is made from): reused as it is, unchecked. To rebuild it from these "
        f"inputs, run the same build with {overwrite}."
    )
