"""What a build tells its user at its end: the counts per split, or how to resume.

Skip warnings scroll by during a long build; the summary makes what was skipped or noted
visible at the end (a build that skipped videos still succeeds, as TFDS builds do), and an
interrupted build says that it resumes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from video_tfrecords.util.text import plural

__all__ = ["build_summary", "interrupted_message", "lines_of"]


def lines_of(lines: int, videos: int) -> str:
    """`"13 lines (9 videos)"`; `"4 lines"` where each line is a video of its own."""
    return plural(lines, "line") + ("" if lines == videos else f" ({plural(videos, 'video')})")


def build_summary(
    name: str,
    lines_listed: Mapping[str, int],
    videos: Mapping[str, int],
    examples: Mapping[str, int],
    metadata: Mapping[str, list],
    info_path: str,
    cache: Sequence[str] = (),
) -> str:
    """Lines: per split, the manifest lines that gave examples of those listed (and the
    videos they name), examples written, lines skipped (a skip each: the two add up
    to the lines listed) and notes; `cache`, what the build read back and kept; where the
    records of the skips and notes are."""
    lines = [f"{name}: built from your manifests."]
    for split, listed in lines_listed.items():
        skipped = sum(1 for r in metadata.get("skipped", ()) if r["split"] == split)
        noted = sum(1 for r in metadata.get("notes", ()) if r["split"] == split)
        lines.append(
            f"  {split}: {plural(examples.get(split, 0), 'example')} written from "
            f"{listed - skipped} of {lines_of(listed, videos[split])}; {skipped} skipped, "
            f"{noted} kept with a note"
        )
    lines += [f"  {line}" for line in cache]
    if any(metadata.get(kind) for kind in ("skipped", "notes")):
        lines.append(
            f"  Why each was skipped or noted: info.metadata['skipped'] and ['notes'] "
            f"({info_path})"
        )
    return "\n".join(lines)


def interrupted_message(videos_kept: int, cache_dir: str) -> str:
    """The one line an interrupted build prints."""
    return (
        f"Interrupted: {plural(videos_kept, 'video')} encoded so far kept in the cache "
        f"({cache_dir}); run the same command to resume."
    )
