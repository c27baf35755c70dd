"""Look at a prepared dataset: its clips as a contact sheet or an animation, or its report.

    python -m video_tfrecords.show --split train --examples 4 --crop_size 112,112 --out clips.png
    python -m video_tfrecords.show clips --mode uniform --num_clips 3 --boxes --out views.gif
    python -m video_tfrecords.show report --out report.png

`clips` (the default) shows what ClipSource gives with any clip argument; `report` counts
each split. Neither imports TensorFlow.
"""

from __future__ import annotations

import argparse
import math
import secrets
import sys

import cv2
import numpy as np

from video_tfrecords.clip_source import ClipSource
from video_tfrecords.clips.spec import SEGMENT_MODES
from video_tfrecords.records import dataset_files
from video_tfrecords.show import animation, clip_flags, report, tiles, views
from video_tfrecords.show.stored import SplitRecords
from video_tfrecords.util.text import plural

COMMANDS = ("clips", "report")


def _add_dataset_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the dataset (as ClipSource finds it)")
    group.add_argument("--data_dir", help="where it was built (default: TFDS's data dir)")
    group.add_argument("--config", help="the config's name (default: the builder's first)")
    group.add_argument("--version", help="a version folder, e.g. 2.3.0 (default: the latest)")
    group.add_argument(
        "--dataset_dir", help="the prepared dataset's own folder, instead of the three above"
    )


def _index_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ints like 0,5,9, got {text!r}") from None


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {text!r}")
    return value


def _clips_parser(commands) -> None:
    parser = commands.add_parser(
        "clips",
        help="N clips of a split as a PNG contact sheet or an animated GIF / MP4 (the default)",
        description="Clips of a split as ClipSource gives them: a PNG contact sheet (one row "
        "per view, its frames side by side) or an animated GIF / MP4 (a grid of views, one "
        "frame of each per image), shrunk to fit a laptop's screen unless --frame_height. Each "
        "tile is titled with its class (or its labels), file, span, clip times and frames, flip "
        "and box; with stored annotations the clip's labels (--labels clip), the segment it was "
        "drawn in (--segment) and its caption(s); with audio, a waveform strip of its window.",
    )
    _add_dataset_flags(parser)
    group = parser.add_argument_group("what to show")
    group.add_argument("--split", default="train", help="the split (default: train)")
    group.add_argument("--examples", type=_positive, default=4,
                       help="how many examples (default: 4)")  # fmt: skip
    group.add_argument("--start", type=int, default=0, help="the first example's index (default 0)")
    group.add_argument(
        "--indices", type=_index_list, help="these examples (e.g. 0,5,9) instead of --start"
    )
    group.add_argument(
        "--shuffle", action="store_true", help="--examples picked at random (seeded by --seed)"
    )
    group.add_argument(
        "--repeats", type=_positive, default=1,
        help="draw each example's clip this many times, as epochs 0, 1, ... draw them: how the "
        "augmentation varies (default: 1)",
    )  # fmt: skip
    group.add_argument(
        "--boxes", action="store_true",
        help="also a tile per clip of its full stored frames with each view's crop box drawn "
        "(a colour per view, labelled with its number, F when flipped)",
    )  # fmt: skip
    group = parser.add_argument_group("the picture")
    group.add_argument(
        "--out", default="clips.png",
        help="the file: .png (a contact sheet), .gif or .mp4 (an animation) (default: clips.png)",
    )  # fmt: skip
    group.add_argument(
        "--frame_height", type=_positive,
        help="each frame's height in pixels, aspect kept (enlarged by pixel copies, reduced by "
        "area averages) (default: as decoded, or all shrunk alike until the picture fits "
        "1600x900 px, a laptop's screen, the tallest no lower than 64 px)",
    )  # fmt: skip
    group.add_argument(
        "--columns", type=_positive, help="animation: tiles a row (default: about a square grid)"
    )
    group.add_argument(
        "--play_fps", type=float,
        help="animation: frames a second (default: the clip's rate, fps / stride, so that it "
        "plays in real time; segment modes: its frames over the video's duration)",
    )  # fmt: skip
    clip_flags.add_clip_flags(parser)


def _report_parser(commands) -> None:
    parser = commands.add_parser(
        "report",
        help="per split: examples, classes, durations, frame rates, sizes, skipped videos",
        description="Per split: examples and shards (from dataset_info.json), stored bytes, "
        "a class histogram, durations, frame counts, frame rates and frame sizes (read from "
        "every record, each one's checksum checked), and the videos the build skipped or "
        "noted, a row per kind of reason with the manifest lines (FILE:LINE) they are about "
        "(metadata.json). A dataset with `labels` (JSON Lines) counts its classes from them: "
        "the examples with each, its distinct segments and the seconds of stored frames in "
        "them. Printed as text; with --out, also drawn as a PNG.",
    )
    _add_dataset_flags(parser)
    parser.add_argument("--splits", help="comma-separated splits (default: all)")
    parser.add_argument(
        "--limit", type=_positive,
        help="read only the first N records of each split for the per-example values "
        "(counts of examples stay exact) (default: all)",
    )  # fmt: skip
    parser.add_argument("--out", help="also draw the report as this PNG")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m video_tfrecords.show",
        description=__doc__.split("\n\n")[0],
        epilog="Each command's flags: python -m video_tfrecords.show clips --help (or report "
        "--help). Without a command, `clips` is meant.",
    )
    commands = top.add_subparsers(dest="command", metavar="{clips,report}")
    _clips_parser(commands)
    _report_parser(commands)
    return top


def _location(args) -> dict:
    return {
        "data_dir": args.data_dir, "config": args.config, "version": args.version,
        "dataset_dir": args.dataset_dir,
    }  # fmt: skip


def _chosen(args, length: int) -> list[int]:
    """Source indices: the chosen examples, each at epochs 0 .. repeats - 1 (e * length + i)."""
    if args.indices:
        wrong = [i for i in args.indices if not 0 <= i < length]
        if wrong:
            raise ValueError(f"--indices {wrong} out of range: split has {length} examples.")
        records = args.indices
    elif args.shuffle:
        rng = np.random.default_rng(args.seed)
        records = rng.choice(length, min(args.examples, length), replace=False).tolist()
    else:
        if not 0 <= args.start < length:
            raise ValueError(f"--start {args.start} out of range: split has {length} examples.")
        records = list(range(args.start, min(args.start + args.examples, length)))
    return [epoch * length + i for i in records for epoch in range(args.repeats)]


def _play_rate(source: ClipSource, records: SplitRecords, first: int) -> float:
    """Frames a second that play the clip in real time."""
    spec = source.spec
    video = records.video(first % len(source))
    if spec.mode in SEGMENT_MODES:
        return spec.num_frames / video.duration if video.duration else 8.0
    rate = spec.fps or video.fps or 8.0
    return rate / spec.min_stride


def run_clips(args) -> str:
    kind = args.out.rsplit(".", 1)[-1].lower()
    if kind not in ("png", *animation.FORMATS):
        raise SystemExit(f"error: --out {args.out}: write .png, .gif or .mp4")
    clip_args = clip_flags.clip_args(args)
    if clip_args["seed"] is None:  # fresh clips, but one seed for the clip, its plan, its boxes
        clip_args["seed"] = args.seed = secrets.randbelow(2**31)
    try:
        source = ClipSource(args.split, **_location(args), **clip_args)
    except ValueError as e:  # ClipSpec's checks, naming the argument
        raise SystemExit(f"error: {e}") from None
    records = SplitRecords(source.dataset_dir, args.split)
    full = views.full_frame_source(source, clip_args) if args.boxes else None
    chosen = _chosen(args, len(source))
    shown = []
    for index in chosen:
        shown += views.example_tiles(source, index, records, full)
    columns = args.columns or math.ceil(math.sqrt(len(shown)))
    if args.frame_height is not None:
        shown, fitted = [tiles.at_height(tile, args.frame_height) for tile in shown], ""
    else:  # a picture a laptop's screen shows whole (tiles.SCREEN)
        size = tiles.sheet_size if kind == "png" else (
            lambda shown, scale: tiles.animation_size(shown, columns, scale))  # fmt: skip
        scale = tiles.fitting_scale(shown, size)
        fitted = "" if scale is None else (
            f", frames shrunk to {max(tiles.scaled_height(t, scale) for t in shown)} px high "
            "to fit (--frame_height sets it)")  # fmt: skip
        shown = [tiles.at_scale(tile, scale) for tile in shown]
    if kind == "png":
        image = tiles.sheet(shown)
        if not cv2.imwrite(args.out, cv2.cvtColor(image, cv2.COLOR_RGB2BGR)):
            raise SystemExit(f"error: cannot write {args.out}")
        size = image.shape
        frames = ""
    else:
        images = tiles.animation_frames(shown, columns)
        rate = args.play_fps or _play_rate(source, records, chosen[0])
        animation.write_animation(args.out, images, rate)
        size = images[0].shape
        frames = f", {len(images)} frames at {rate:.3g} fps"
    return (
        f"wrote {args.out}: {plural(len(shown), 'tile')} of {plural(len(chosen), 'clip')} from "
        f"split {args.split!r} ({plural(len(source), 'example')}), {size[1]}x{size[0]} px"
        f"{fitted}{frames}; seed {source.spec.seed} (--seed {source.spec.seed} draws them again)"
    )


def _progress():
    """On a terminal, a line on stderr saying how far the records are read (a large split
    takes a while: every record is read); else None."""
    if not sys.stderr.isatty():
        return None

    def show(split: str, done: int, total: int) -> None:
        if done == total or done % 500 == 0:
            end = "\n" if done == total else ""
            print(f"\rreading {split}: {done}/{total} records", end=end, file=sys.stderr)

    return show


def run_report(args) -> str:
    location = _location(args)
    dataset_dir = location.pop("dataset_dir") or dataset_files.find_dataset_dir(**location)
    splits = args.splits.split(",") if args.splits else None
    statistics = report.dataset_report(dataset_dir, splits, args.limit, _progress())
    text = report.as_text(statistics)
    if args.out:
        from video_tfrecords.show import charts  # pylint: disable=import-outside-toplevel

        image = charts.report_image(statistics)
        if not cv2.imwrite(args.out, cv2.cvtColor(image, cv2.COLOR_RGB2BGR)):
            raise SystemExit(f"error: cannot write {args.out}")
        text += f"\nwrote {args.out}: {image.shape[1]}x{image.shape[0]} px"
    return text


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in (*COMMANDS, "-h", "--help"):
        argv.insert(0, "clips")
    args = parser().parse_args(argv)
    try:
        print(run_clips(args) if args.command == "clips" else run_report(args))
    except (ValueError, FileNotFoundError) as e:
        raise SystemExit(f"error: {e}") from None


if __name__ == "__main__":
    main()
