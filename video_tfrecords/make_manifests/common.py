"""What every format shares: finding the videos, collecting problems, writing the manual dir.

A format module only reads its annotation files into a `Parsed`; `convert` then
looks every video up in one walk of --videos and checks everything before it
writes a byte, so a bad line costs seconds and leaves --out as it was.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence

from video_tfrecords.ingest.manifest import (
    LABELS_FILE,
    MANIFEST_FILES,
    VIDEO_EXTENSIONS,
    ManifestError,
    looks_like_video_file,
)

# Extensions in order of preference when one name has several (a re-download as webm next to
# the mp4, say): the order of VIDEO_EXTENSIONS.
_EXT_RANK = {ext: rank for rank, ext in enumerate(VIDEO_EXTENSIONS)}
SPLIT_FILES = {"train": "train.txt", "val": "val.txt", "test": "test.txt"}
# Every file name the builder reads as a manifest: one left from another run would be built too.
BUILDER_MANIFESTS = tuple(name for names in MANIFEST_FILES.values() for name in names)


class AnnotationError(ManifestError):
    """The annotations or videos cannot be converted; `problems` lists each, most as FILE:LINE."""

    WHAT = "in the annotations, nothing written"


@dataclasses.dataclass(frozen=True)
class Annotation:
    """One labelled video of the annotations, and how to find its file."""

    where: str  # "FILE:LINE" of the annotation, for messages and missing.txt
    split: str  # "train", "val" or "test"
    label: int  # class id, an index into `Parsed.classes`
    stems: tuple[str, ...] = ()  # file names without extension to look for, best first
    path: str | None = None  # the path relative to --videos as annotated, taken when it exists
    ext: str | None = None  # the annotated extension, preferred over the others
    any_case: bool = False  # also match the file name ignoring case
    file: str | None = None  # the video itself, when the format found it (no look-up)

    def looked_for(self) -> str:
        names = ([self.path] if self.path else []) + [f"{stem}.*" for stem in self.stems]
        return " or ".join(names) + (" (any case)" if self.any_case else "")


@dataclasses.dataclass
class Parsed:
    """What a format module read: the classes, the labelled videos, and what it left out."""

    classes: list[str]
    annotations: list[Annotation]
    problems: list[str]
    unlabeled: int = 0  # videos the annotations list without a label (not written)
    notes: list[str] = dataclasses.field(default_factory=list)  # lines for the summary


@dataclasses.dataclass(frozen=True)
class Result:
    """What was written: videos per split, classes, and the videos left out."""

    out: str
    splits: dict[str, int]  # split -> videos written ("train", "val", "test")
    classes: int
    missing: int  # annotated videos not found under --videos (each a line of missing.txt)
    unlabeled: int  # videos listed without a label, not written
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        lines = [f"wrote {self.out}"]
        lines += [f"  {split}: {count:,} videos" for split, count in self.splits.items()]
        lines.append(f"  classes: {self.classes:,}")
        missing = os.path.join(self.out, "missing.txt")
        lines.append(f"  missing: {self.missing:,}" + (f" (see {missing})" if self.missing else ""))
        lines.append(f"  unlabeled: {self.unlabeled:,}")
        lines += [f"  note: {note}" for note in self.notes]
        lines.append(
            f"next: tfds build video_tfrecords --imports video_tfrecords --manual_dir {self.out} "
            "--config=default"
        )
        return "\n".join(lines)


def read_lines(path: str, problems: list[str]) -> list[tuple[int, str]]:
    """(line number, text without line end) of a text file; CRLF and LF alike."""
    try:
        with open(path, encoding="utf-8-sig") as f:  # universal newlines; a BOM is dropped
            return list(enumerate(f.read().split("\n"), start=1))
    except UnicodeDecodeError as e:
        problems.append(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})")
    except OSError as e:
        problems.append(f"{path}: cannot be read ({e.strerror})")
    return []


def ordered_classes(names) -> list[str]:
    """Class names sorted, except that a name that is an integer k below their count gets id k.

    The builder reads a manifest label that names a class as that class, so a class named
    "2" must be id 2, or label 2 written for another class would be read as it.
    """
    names = sorted(set(names))
    pinned = {int(n): n for n in names if is_id(n) and int(n) < len(names)}
    rest = iter(n for n in names if n not in pinned.values())
    return [pinned[i] if i in pinned else next(rest) for i in range(len(names))]


def stem_and_extension(file_name: str) -> tuple[str, str | None]:
    """`v_YoYo_g01_c01.avi` -> ("v_YoYo_g01_c01", "avi"); a name without a dot -> (name, None)."""
    stem, dot, extension = file_name.rpartition(".")
    return (stem, extension) if dot else (file_name, None)


def is_id(text: str) -> bool:
    """Whether the builder would read `text` as integer id `text` (no sign, no leading zero)."""
    return text.isascii() and text.isdigit() and str(int(text)) == text


def class_problems(classes: Sequence[str], source: str) -> list[str]:
    """Names labels.txt cannot hold as they are, or that the builder would misread as ids."""
    problems, seen = [], {}
    for i, name in enumerate(classes):
        if not name or name != name.strip() or name.splitlines() != [name]:
            problems.append(
                f"{source}: class name {name!r} is empty, has spaces at an end or a line "
                "break (labels.txt cannot hold it)"
            )
        elif name in seen:
            problems.append(f"{source}: class {name!r} is there twice (ids {seen[name]}, {i})")
        elif is_id(name) and int(name) < len(classes) and int(name) != i:
            problems.append(
                f"{source}: class {name!r} has id {i}: the builder would read label {name} "
                f"as this class, not as class {name}"
            )
        seen.setdefault(name, i)
    return problems




def walk_videos(root: str, notes: list[str] | None = None) -> Iterator[os.DirEntry]:
    """Every video file under `root` (hidden names skipped, symlinked folders followed once)."""
    seen, stack = set(), [root]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as e:
            if notes is not None:
                notes.append(f"{folder}: not searched ({e.strerror})")
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if entry.is_dir():
                stack.append(entry.path)
            elif looks_like_video_file(name) and entry.is_file():
                yield entry


class VideoIndex:
    """Every video under a folder by file name, from one walk: no globbing per annotation."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.notes: list[str] = []
        self.by_stem: dict[str, list[str]] = {}
        for entry in walk_videos(self.root, self.notes):
            stem = entry.name.rpartition(".")[0]
            self.by_stem.setdefault(stem, []).append(entry.path)
        self._by_lower_stem: dict[str, list[str]] | None = None

    def find(self, a: Annotation) -> list[str]:
        """The file(s) of `a`: [] if none, several if they tie (an ambiguity to report).

        The rule, in order: the annotated path itself; the first stem with any file (exact
        case, then any case if `a.any_case`); the annotated extension; then VIDEO_EXTENSIONS'
        order. Files still tied (one name in two folders) are all returned.
        """
        if a.path is not None:
            exact = os.path.join(self.root, *a.path.split("/"))
            if exact in self.by_stem.get(os.path.basename(exact).rpartition(".")[0], ()):
                return [exact]
        found = []
        for stem in a.stems:
            found = self.by_stem.get(stem) or (a.any_case and self._lower().get(stem.lower()))
            if found:
                break
        if not found or len(found) == 1:
            return list(found or ())

        def rank(path: str) -> tuple[bool, int]:
            ext = path.rpartition(".")[2].lower()
            return (ext != (a.ext or "").lower(), _EXT_RANK[ext])

        best = min(map(rank, found))
        return [path for path in found if rank(path) == best]

    def _lower(self) -> dict[str, list[str]]:
        if self._by_lower_stem is None:
            self._by_lower_stem = {}
            for stem, paths in self.by_stem.items():
                self._by_lower_stem.setdefault(stem.lower(), []).extend(paths)
        return self._by_lower_stem


def path_problem(path: str) -> str | None:
    """Why `path` cannot be a manifest line's path, or None."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8"
    if path.splitlines() != [path] or path != path.strip():
        return "its name has a line break or spaces at an end, which a manifest cannot hold"
    return None


def convert(parsed: Parsed, videos: str, out: str) -> Result:
    """Finds the videos of `parsed`, checks everything, then writes the manual dir `out`."""
    problems = list(parsed.problems) + class_problems(parsed.classes, "classes")
    if not os.path.isdir(videos):
        raise AnnotationError([*problems, f"{videos}: --videos is not a folder"])
    index = None
    notes = list(parsed.notes)
    if any(a.file is None for a in parsed.annotations):
        index = VideoIndex(videos)
        notes += index.notes
    lines = {split: [] for split in SPLIT_FILES}
    missing, claimed = [], {}
    for a in parsed.annotations:
        found = [a.file] if a.file is not None else index.find(a)
        if not found:
            missing.append(f"{a.where}: {a.looked_for()}")
            continue
        if len(found) > 1:
            problems.append(f"{a.where}: several videos match: {', '.join(sorted(found))}")
            continue
        path = found[0] if a.file is None else os.path.abspath(a.file)  # index paths: absolute
        reason = path_problem(path)
        if reason:
            problems.append(f"{a.where}: {path}: {reason}")
        elif path in claimed:
            problems.append(f"{a.where}: {path} is already the video of {claimed[path]}")
        else:
            claimed[path] = a.where
            lines[a.split].append(f"{path} {a.label}\n")
    if not parsed.annotations and not problems:
        problems.append(f"the annotations label no video ({parsed.unlabeled:,} unlabeled)")
    elif not claimed and not problems:
        problems.append(
            f"{videos}: none of the {len(parsed.annotations):,} annotated videos is there "
            f"(the first looked for: {parsed.annotations[0].looked_for()})"
        )
    for split, split_lines in lines.items():
        if not split_lines and any(a.split == split for a in parsed.annotations):
            notes.append(f"{split}: no video found, no {SPLIT_FILES[split]} written")
    written = {SPLIT_FILES[split]: text for split, text in lines.items() if text}
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
    os.makedirs(out, exist_ok=True)
    write_files(out, written)
    return Result(
        out=out,
        splits={split: len(text) for split, text in lines.items() if text},
        classes=len(parsed.classes),
        missing=len(missing),
        unlabeled=parsed.unlabeled,
        notes=tuple(notes),
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
