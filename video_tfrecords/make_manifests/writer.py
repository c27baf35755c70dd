"""Writes the manual dir: finds each example's video, checks everything, then writes at once.

A split is a text manifest (`{path} {label}` a line) while every example of it is a whole
labelled video, and a JSON Lines one (`{"path": ..., ...}` a line, json.dumps with
ensure_ascii=False, UTF-8) as soon as one example has more (several labels, a span, segments,
captions): one file a split, every line of it an object. A video inside the manual dir is
named relative to it (the folder moves as a whole, and the build's `filename` stays), any
other by its absolute path.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

from video_tfrecords.ingest.manifest import LABELS_FILE, MANIFEST_FILES
from video_tfrecords.make_manifests import common
from video_tfrecords.make_manifests.common import Annotation, AnnotationError, Parsed, Result

SPLIT_FILES = {"train": "train.txt", "val": "val.txt", "test": "test.txt"}
JSONL_FILES = {"train": "train.jsonl", "val": "val.jsonl", "test": "test.jsonl"}
# Every file name the builder reads as a manifest: one left from another run would be built too.
BUILDER_MANIFESTS = (
    *(name for names in MANIFEST_FILES.values() for name in names),
    *JSONL_FILES.values(),
    "validation.jsonl",
)


def path_problem(path: str, jsonl: bool = False) -> str | None:
    """Why `path` cannot be a manifest line's path, or None (JSON escapes what text cannot)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8"
    if not jsonl and (path.splitlines() != [path] or path != path.strip()):
        return "its name has a line break or spaces at an end, which a manifest cannot hold"
    return None


def manifest_path(path: str, out: str) -> str:
    """How a manifest in `out` names the video at `path` (absolute): relative to `out` if the
    video is inside it, else absolute."""
    root = os.path.abspath(out)
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else path


def _fields(a: Annotation, path: str, classes: list[str]) -> dict | None:
    """The JSON Lines fields after "path" of `a` found at `path`; None: a text line will do."""
    if a.example is not None:
        label = {} if a.label is None else {"label": classes[a.label]}
        return {**label, **a.example}
    stem = os.path.basename(path).rpartition(".")[0]
    if a.span is not None and stem in a.span_stems:
        return {"label": classes[a.label], "start": a.span[0], "end": a.span[1]}
    return None


def _json_line(obj: dict) -> str:
    """One line of a JSON Lines manifest: UTF-8 as it is (no \\u escapes), no line break inside."""
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _details(objects: list[dict]) -> str:
    """A JSON Lines split's counts for its summary line."""
    videos = len({obj["path"] for obj in objects})
    parts = [f"{videos:,} videos"]
    for key, what in (("segments", "segments"), ("captions", "captions")):
        if count := sum(len(obj.get(key, ())) for obj in objects):
            parts.append(f"{count:,} {what}")
    if spans := sum("start" in obj for obj in objects):
        parts.append(f"{spans:,} spans")
    return f"{len(objects):,} examples ({', '.join(parts)})"


def convert(parsed: Parsed, videos: str, out: str) -> Result:
    """Finds the videos of `parsed`, checks everything, then writes the manual dir `out`."""
    problems = list(parsed.problems) + common.class_problems(parsed.classes, "classes")
    if not os.path.isdir(videos):
        raise AnnotationError([*problems, f"{videos}: --videos is not a folder"])
    index = None
    notes = list(parsed.notes)
    if any(a.file is None for a in parsed.annotations):
        index = common.VideoIndex(videos)
        notes += index.notes
    found_by_split = {split: [] for split in SPLIT_FILES}  # split -> [(a, named, fields, line)]
    missing, claimed = {}, {}  # missing: an ordered set
    for a in parsed.annotations:
        found = [a.file] if a.file is not None else index.find(a)
        if not found:
            missing[f"{a.where}: {a.looked_for()}"] = None  # once for all a video's segments
            continue
        if len(found) > 1:
            problems.append(f"{a.where}: several videos match: {', '.join(sorted(found))}")
            continue
        path = found[0] if a.file is None else os.path.abspath(a.file)  # index paths: absolute
        fields = _fields(a, path, parsed.classes)
        named = manifest_path(path, out)
        line = None if fields is None else _json_line({"path": named, **fields})
        # One file may be several examples of different spans, but one whole video only once.
        key = path if fields is None or "start" not in fields else line
        if key in claimed:
            problems.append(f"{a.where}: {path} is already the video of {claimed[key]}")
            continue
        claimed[key] = a.where
        found_by_split[a.split].append((a, named, fields, line))
    written, files, details = {}, {}, {}
    for split, examples in found_by_split.items():
        jsonl = any(fields is not None for _, _, fields, _ in examples)
        lines, objects = [], []
        for a, path, fields, line in examples:
            if reason := path_problem(path, jsonl):
                problems.append(f"{a.where}: {path}: {reason}")
            elif jsonl:
                obj = {"path": path, **(fields or {"label": parsed.classes[a.label]})}
                objects.append(obj)
                lines.append(line or _json_line(obj))
            else:
                lines.append(f"{path} {a.label}\n")
        if jsonl:
            details[split] = _details(objects)
        if lines:
            files[split] = (JSONL_FILES if jsonl else SPLIT_FILES)[split]
            written[files[split]] = lines
        elif any(a.split == split for a in parsed.annotations):
            notes.append(f"{split}: no video found, no manifest written")
    if not parsed.annotations and not problems:
        problems.append(f"the annotations label no video ({parsed.unlabeled:,} unlabeled)")
    elif not claimed and not problems:
        problems.append(
            f"{videos}: none of the {len(parsed.annotations):,} annotated videos is there "
            f"(the first looked for: {parsed.annotations[0].looked_for()})"
        )
    if os.path.exists(out) and not os.path.isdir(out):
        problems.append(f"{out}: --out is a file, not a folder")
    for name in BUILDER_MANIFESTS:
        if name not in written and os.path.isfile(os.path.join(out, name)):
            problems.append(
                f"{os.path.join(out, name)}: a manifest this run does not write, which the build "
                "would read too; remove it or choose another --out"
            )
    if problems:
        raise AnnotationError(problems)
    written[LABELS_FILE] = [name + "\n" for name in parsed.classes]
    written["missing.txt"] = [line + "\n" for line in missing]
    written["dropped.txt"] = [line + "\n" for line in parsed.dropped]
    if parsed.clipped is not None:
        written["clipped.txt"] = [line + "\n" for line in parsed.clipped]
    os.makedirs(out, exist_ok=True)
    write_files(out, written)
    return Result(
        out=out,
        splits={split: len(written[name]) for split, name in files.items()},
        classes=len(parsed.classes),
        missing=len(missing),
        unlabeled=parsed.unlabeled,
        notes=tuple(notes),
        files=files,
        details=details,
        dropped=len(parsed.dropped),
        clipped=None if parsed.clipped is None else len(parsed.clipped),
    )


def write_files(out: str, files: dict[str, list[str]]) -> None:
    """Writes every file into a temporary folder in `out`, then moves each into place."""
    staging = tempfile.mkdtemp(prefix=".make_manifests-", dir=out)
    try:
        for name, lines in files.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8", newline="\n") as f:
                f.writelines(lines)
        for name in files:
            os.replace(os.path.join(staging, name), os.path.join(out, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
