"""Build throughput per core: the old OpenCV decode path against the PyAV one (video_io).

    python benchmarks/decode_backends.py            # 250-frame sources, 5 rounds (~5 min)
    python benchmarks/decode_backends.py --quick    # 40-frame sources, 3 rounds (< 1 min)
    python benchmarks/decode_backends.py --videos a.mp4 b.mkv   # your files too

Each path turns a whole video into the JPEG frames a build stores (short side
256, q90), on one core: the process is pinned to one CPU, OpenCV runs one
thread, each decoder one thread, and the time is the process's CPU time (what a
core spends per video, whatever else the machine runs).
  old: OpenCV VideoCapture -> cv2.resize (area when shrinking 2x or more, else
       bilinear) -> cv2.imencode, as video_io did before PyAV;
  new: video_io.Video(threads=1).frames() -> Frame.bgr(size) -> cv2.imencode.
The sources are made here (synthetic motion, as the other benchmarks use):
H.264 340x256 (stored as it is), 480x360 and 1280x720, and HEVC 1280x720 in 8 and in 10 bits (HLG, BT.2020)
for the cost of 10-bit video. Rounds interleave every (source, path) pair, the
order alternating, so drift on a shared machine hits both paths alike; the
table gives medians and the min-max of the per-round ratios. Markdown on
stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import fractions
import os
import pathlib
import statistics
import sys
import time

import av
import cv2

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import synthetic
from video_tfrecords import video_io

SHORT_SIDE = 256
JPEG = [cv2.IMWRITE_JPEG_QUALITY, 90]
SCENE = 50  # frames per synthetic scene: a cut (and a keyframe) every 2 s


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


# -- sources -----------------------------------------------------------------------------------


SOURCES = {  # name -> (encoder, height, width, pixel format, colour tags)
    "H.264 340x256": ("libx264", 256, 340, "yuv420p", None),  # stored as it is
    "H.264 480x360": ("libx264", 360, 480, "yuv420p", None),
    "H.264 1280x720": ("libx264", 720, 1280, "yuv420p", None),
    "HEVC 1280x720 8-bit": ("libx265", 720, 1280, "yuv420p", None),
    "HEVC 1280x720 10-bit HLG": ("libx265", 720, 1280, "yuv420p10le", (9, 1, 9, 18)),
}


def make_source(folder: pathlib.Path, name: str, frames: int) -> str:
    """Writes (once) `frames` frames of synthetic scenes with the source's encoder."""
    encoder, height, width, pix_fmt, colour = SOURCES[name]
    path = folder / f"{name.replace(' ', '_')}_{frames}.mp4"
    if path.exists():
        return str(path)
    log(f"writing {path.name}")
    partial = path.with_suffix(".partial.mp4")
    with av.open(str(partial), "w") as container:
        stream = container.add_stream(encoder, rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.options = {"crf": "18", "preset": "veryfast"}
        if encoder == "libx265":
            stream.options = {**stream.options, "x265-params": "log-level=error"}
        if colour:
            context = stream.codec_context
            context.colorspace, context.color_range, context.color_primaries = colour[:3]
            context.color_trc = colour[3]
        for start in range(0, frames, SCENE):
            count = min(SCENE, frames - start)
            for index, rgb in enumerate(synthetic.moving_frames(count, height, width, start)):
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(
                    format=pix_fmt, dst_colorspace=9 if colour else None
                )
                frame.pts, frame.time_base = start + index, fractions.Fraction(1, 25)
                container.mux(stream.encode(frame))
        container.mux(stream.encode())
    partial.rename(path)
    return str(path)


# -- the two paths ------------------------------------------------------------------------------


def stored_size(height: int, width: int) -> tuple[int, int]:
    """Short side 256, aspect kept, never upscaled (the builder's default config)."""
    scale = min(1.0, SHORT_SIDE / min(height, width))
    return max(1, round(height * scale)), max(1, round(width * scale))


def old_path(path: str) -> int:
    """OpenCV decode, resize and JPEG, as the OpenCV video_io did; returns frames stored."""
    capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, 1])
    count, size = 0, None
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        if size is None:
            size = stored_size(*frame.shape[:2])
            shrink = size[0] * 2 <= frame.shape[0] or size[1] * 2 <= frame.shape[1]
            interpolation = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
        if frame.shape[:2] != size:
            frame = cv2.resize(frame, size[::-1], interpolation=interpolation)
        cv2.imencode(".jpg", frame, JPEG)
        count += 1
    capture.release()
    return count


def new_path(path: str) -> int:
    """video_io decode with the fused convert + resize, then JPEG; returns frames stored."""
    with video_io.Video(path, threads=1) as video:
        size = stored_size(video.info.display_height, video.info.display_width)
        count = 0
        for frame in video.frames():
            cv2.imencode(".jpg", frame.bgr(*size), JPEG)
            count += 1
    return count


PATHS = {"old (OpenCV)": old_path, "new (PyAV video_io)": new_path}


# -- measurement ----------------------------------------------------------------------------------


def measure(sources: dict[str, str], rounds: int) -> tuple[dict, dict]:
    """CPU seconds per video of every (source, path), `rounds` times interleaved; frames stored."""
    seconds = {(s, p): [] for s in sources for p in PATHS}
    frames = {}
    for round_ in range(rounds + 1):  # round 0 warms caches and libraries up, not counted
        for source, path in sources.items():
            order = list(PATHS) if round_ % 2 else list(PATHS)[::-1]
            for name in order:
                start = time.process_time()  # CPU seconds: what a core spends, whatever else runs
                count = PATHS[name](path)
                elapsed = time.process_time() - start
                frames.setdefault(source, {})[name] = count
                if round_:
                    seconds[(source, name)].append(elapsed)
        log(f"round {round_}/{rounds} done")
    for source, counts in frames.items():
        if len(set(counts.values())) != 1:
            log(f"warning: {source}: the paths stored different frame counts {counts}")
    return seconds, frames


def ratio_text(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def table(sources, seconds, frames) -> str:
    """Markdown: videos/s of each path and the per-round speed ratio new/old."""
    old, new = PATHS
    lines = [
        "| source | frames | stored | old videos/s | new videos/s | new/old speed, median (min-max) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for source, path in sources.items():
        with video_io.Video(path) as video:
            size = stored_size(video.info.display_height, video.info.display_width)
        t_old, t_new = seconds[(source, old)], seconds[(source, new)]
        ratios = [o / n for o, n in zip(t_old, t_new)]
        lines.append(
            f"| {source} | {frames[source][new]} | {size[1]}x{size[0]} "
            f"| {1 / statistics.median(t_old):.2f} | {1 / statistics.median(t_new):.2f} "
            f"| {ratio_text(ratios)} |"
        )
    eight, ten = "HEVC 1280x720 8-bit", "HEVC 1280x720 10-bit HLG"
    if eight in sources and ten in sources:
        for name in PATHS:
            costs = [t / e for t, e in zip(seconds[(ten, name)], seconds[(eight, name)])]
            lines.append(
                f"\n10-bit HLG / 8-bit HEVC, same size, {name}: {ratio_text(costs)}x the time"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40-frame sources, 3 rounds")
    parser.add_argument("--frames", type=int, help="frames per source (default 250)")
    parser.add_argument("--rounds", type=int, help="measured rounds (default 5)")
    parser.add_argument("--videos", nargs="*", default=[], help="your own files, measured too")
    parser.add_argument("--only", nargs="*", choices=list(SOURCES), help="a subset of the sources")
    parser.add_argument("--out", default="benchmarks/out/decode_backends", help="sources folder")
    parser.add_argument("--cpu", type=int, help="the CPU to pin to (default: the first allowed)")
    args = parser.parse_args()
    frames = args.frames or (40 if args.quick else 250)
    rounds = args.rounds or (3 if args.quick else 5)
    cpu = args.cpu if args.cpu is not None else min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    cv2.setNumThreads(1)
    folder = pathlib.Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    sources = {name: make_source(folder, name, frames) for name in args.only or SOURCES}
    sources.update({os.path.basename(v): os.path.abspath(v) for v in args.videos})
    seconds, counts = measure(sources, rounds)
    print(f"One core (CPU {cpu}), {rounds} rounds, JPEG q90 at short side {SHORT_SIDE}:\n")
    print(table(sources, seconds, counts))


if __name__ == "__main__":
    main()
