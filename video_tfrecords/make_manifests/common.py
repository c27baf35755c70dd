"""What every format shares: the annotations' types, reading helpers and finding the videos.

A format module only reads its annotation files into a `Parsed`; `writer.convert` then
looks every video up in one walk of --videos and checks everything before it
writes a byte, so a bad line costs seconds and leaves --out as it was.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Iterator, Sequence

from video_tfrecords.ingest.manifest import VIDEO_EXTENSIONS, ManifestError

# Animations FFmpeg decodes as videos, so the build reads them as it reads any container. A
# `.png` is taken only when it is an APNG, a `.webp` never: FFmpeg decodes still WebP only.
ANIMATION_EXTENSIONS = ("gif", "apng")
READABLE_EXTENSIONS = VIDEO_EXTENSIONS + ANIMATION_EXTENSIONS
STILL_IMAGES = ("png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp", "heic", "avif", "jxl")
# Extensions in order of preference when one name has several (a re-download as webm next to
# the mp4, say): the order of VIDEO_EXTENSIONS, then the animations, then an APNG's png.
_EXT_RANK = {ext: rank for rank, ext in enumerate((*READABLE_EXTENSIONS, "png"))}


class AnnotationError(ManifestError):
    """The annotations or videos cannot be converted; `problems` lists each, most as FILE:LINE."""

    WHAT = "in the annotations, nothing written"


@dataclasses.dataclass(frozen=True)
class Annotation:
    """One example of the annotations (a labelled video, or a span of one), and how to find
    its file."""

    where: str  # "FILE:LINE" of the annotation, for messages and missing.txt
    split: str  # "train", "val" or "test"
    label: int | None  # class id, an index into `Parsed.classes`; None: `example` says
    stems: tuple[str, ...] = ()  # file names without extension to look for, best first
    path: str | None = None  # the path relative to --videos as annotated, taken when it exists
    ext: str | None = None  # the annotated extension, preferred over the others
    any_case: bool = False  # also match the file name ignoring case
    file: str | None = None  # the video itself, when the format found it (no look-up)
    # The JSON Lines object's fields after "path" (class names, seconds); None: a text line.
    example: dict | None = None
    # Kinetics: the (start, end) seconds written when the file found is one of `span_stems`
    # (the untrimmed video), which makes the example a JSON Lines one.
    span: tuple[float, float] | None = None
    span_stems: tuple[str, ...] = ()

    def looked_for(self) -> str:
        names = ([self.path] if self.path else []) + [f"{stem}.*" for stem in self.stems]
        return " or ".join(names) + (" (any case)" if self.any_case else "")


@dataclasses.dataclass
class Parsed:
    """What a format module read: the classes, the examples, and what it left out or changed."""

    classes: list[str]
    annotations: list[Annotation]
    problems: list[str]
    unlabeled: int = 0  # videos the annotations list without a label (not written)
    notes: list[str] = dataclasses.field(default_factory=list)  # lines for the summary
    # "FILE:LINE: what: reason" of each item read and left out (dropped.txt).
    dropped: list[str] = dataclasses.field(default_factory=list)
    # "FILE:LINE: ..." of each span cut to its video's length (clipped.txt); None: the format
    # states no lengths, and no clipped.txt is written.
    clipped: list[str] | None = None


@dataclasses.dataclass(frozen=True)
class Result:
    """What was written: examples per split, classes, and what was left out."""

    out: str
    splits: dict[str, int]  # split -> examples written ("train", "val", "test")
    classes: int
    missing: int  # annotated videos not found under --videos (each a line of missing.txt)
    unlabeled: int  # videos listed without a label, not written
    notes: tuple[str, ...] = ()
    files: dict[str, str] = dataclasses.field(default_factory=dict)  # split -> manifest name
    details: dict[str, str] = dataclasses.field(default_factory=dict)  # split -> its counts
    dropped: int = 0  # lines of dropped.txt
    clipped: int | None = None  # lines of clipped.txt; None: none written

    def summary(self) -> str:
        """One line per split, then the totals and where each record is."""
        lines = [f"wrote {self.out}"]
        for split, count in self.splits.items():
            what = self.details.get(split) or f"{count:,} videos"
            lines.append(f"  {split}: {what} -> {self.files.get(split, '?')}")
        lines.append(f"  classes: {self.classes:,}")
        for name, count in (("missing", self.missing), ("dropped", self.dropped),
                            ("clipped", self.clipped)):  # fmt: skip
            if count is not None:
                record = os.path.join(self.out, f"{name}.txt")
                lines.append(f"  {name}: {count:,}" + (f" (see {record})" if count else ""))
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


def read_csv(path: str, required: Sequence[str], problems: list[str]) -> list[tuple[int, dict]]:
    """The rows of a CSV with a header as (line a row starts on, {column: value stripped}).

    Column names are matched in lower case; blank rows are skipped.
    """
    rows = []
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f)
            header = [name.strip().lower() for name in next(reader, [])]
            absent = [name for name in required if name not in header]
            if absent:
                problems.append(f"{path}:1: header {header} lacks {', '.join(absent)}")
                return []
            start = reader.line_num + 1
            for row in reader:
                line, start = start, reader.line_num + 1
                if not any(field.strip() for field in row):
                    continue
                if len(row) != len(header):
                    problems.append(
                        f"{path}:{line}: {len(row)} fields, the header has "
                        f"{len(header)} ({','.join(header)})"
                    )
                    continue
                rows.append((line, dict(zip(header, map(str.strip, row), strict=True))))
    except UnicodeDecodeError as e:
        problems.append(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})")
    except (OSError, csv.Error) as e:
        problems.append(f"{path}: cannot be read ({e})")
    return rows


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


def _is_apng(path: str) -> bool:
    """Whether a PNG file is animated: its acTL chunk comes before the first IDAT (APNG spec)."""
    try:
        with open(path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                return False
            while len(head := f.read(8)) == 8:
                kind = head[4:]
                if kind in (b"acTL", b"IDAT", b"IEND"):
                    return kind == b"acTL"
                f.seek(int.from_bytes(head[:4], "big") + 4, os.SEEK_CUR)  # data and CRC
    except OSError:
        pass
    return False


def not_a_video(path: str) -> str | None:
    """Why the build would not read file `path` as a video, or None when it would.

    By extension: the containers of VIDEO_EXTENSIONS and the animations FFmpeg decodes; a
    still image (which FFmpeg reads as one frame) is not a video, an APNG named .png is.
    """
    stem, ext = stem_and_extension(os.path.basename(path))
    ext = (ext or "").lower()
    if stem and ext in READABLE_EXTENSIONS:
        return None
    if stem and ext == "png" and _is_apng(path):
        return None
    if ext == "webp":
        return "a WebP image: FFmpeg decodes still WebP only, not an animated one"
    if ext in STILL_IMAGES:
        return f"a still image (.{ext}), not a video"
    return f"not a video container or animation by its extension ({ext or 'none'})"


def walk_videos(
    root: str, notes: list[str] | None = None, ignored: list[str] | None = None
) -> Iterator[os.DirEntry]:
    """Every video file under `root` (hidden names skipped, symlinked folders followed once).

    With `ignored`, every other file is appended to it as "PATH: why not"; without, files are
    judged by extension alone (an APNG named .png is not opened: a folder of extracted PNG
    frames would cost a read each).
    """
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
            elif not entry.is_file():
                continue
            elif ignored is None:
                stem, ext = stem_and_extension(name)
                if stem and (ext or "").lower() in READABLE_EXTENSIONS:
                    yield entry
            elif (reason := not_a_video(entry.path)) is None:
                yield entry
            else:
                ignored.append(f"{entry.path}: not taken: {reason}")


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
        order, then the animations'. Files still tied (one name in two folders) are all returned.
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
