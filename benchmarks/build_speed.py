"""Build speed: `download_and_prepare` against its bound, on one core and on all.

The bound is OpenCV decode + resize + JPEG encode of every frame and nothing else (`builds.bound`);
the build is timed imports excluded, and in steady state (videos between the first and the last
result). Sources: 480x360 synthetic videos of 250 frames, brought to 341x256 by `default`.
"""

from __future__ import annotations

import os
import shutil
from functools import partial

import builds
import video_sets
from timing import arguments, interleave, log, median, ratio, rounds_note, table

SHORT_SIDE, QUALITY = 256, 90  # the default config's
HEIGHT, WIDTH, FRAMES = 360, 480, 250
BOUND_1 = "bound, 1 core: OpenCV decode + resize + imencode"
BUILD_1 = "download_and_prepare, num_workers=1, same core"
BOUND_N = "bound, all cores: one process per core"
BUILD_N = "download_and_prepare, num_workers=0 (one per core)"


def build_set(args) -> video_sets.VideoSet:
    """The first videos of --manual_dir's manifests, or synthetic ones (kept between runs)."""
    count = 4 if args.quick else 16
    if args.manual_dir:
        paths = video_sets.user_videos(args.manual_dir, count, 1)
    else:
        folder = os.path.join(args.out, "videos", f"build_{FRAMES}x{HEIGHT}x{WIDTH}")
        paths = video_sets.synthetic_videos(folder, count, FRAMES, HEIGHT, WIDTH)
    return video_sets.video_set(os.path.join(args.out, "manual", "build"), paths)


def measure(videos: video_sets.VideoSet, scratch: str, rounds: int) -> dict[str, list]:
    """Interleaved `builds.Rate`s of the builder and the bound, on one core and on all."""
    paths, count, cores = videos.paths, len(videos.paths), os.cpu_count()
    build = partial(builds.build_rate, videos.manual_dir)
    w1, w0 = {"name": "w1", "num_workers": 1}, {"name": "w0", "num_workers": 0}
    measures = {
        BOUND_1: partial(builds.bound_one_core, paths, SHORT_SIDE, QUALITY),
        BUILD_1: partial(build, os.path.join(scratch, "build1"), w1, count, True),
        BOUND_N: partial(builds.bound_parallel, paths, SHORT_SIDE, QUALITY, cores),
        BUILD_N: partial(build, os.path.join(scratch, "buildn"), w0, count, False),
    }
    log(f"building: {count} videos, {len(measures)} variants x {rounds} rounds")
    return interleave(measures, rounds)


def rows(rates: dict[str, list]) -> list[list[str]]:
    """Rates, and ratios against their targets."""
    total = {name: [r.total for r in results] for name, results in rates.items()}
    steady = {name: [r.steady for r in results] for name, results in rates.items()}
    found = []
    for name in (BOUND_1, BUILD_1, BOUND_N, BUILD_N):
        result = f"{median(total[name]):.2f} videos/s"
        if name in (BUILD_1, BUILD_N):
            result += f"; steady state {median(steady[name]):.2f}"
        found.append([name, result, "", ""])
    for label, a, b, target in (
        ("single/bound (1 core)", total[BUILD_1], total[BOUND_1], 0.8),
        ("parallel/single", total[BUILD_N], total[BUILD_1], 1.7),
        ("parallel/single, steady", steady[BUILD_N], steady[BUILD_1], None),
        ("parallel/bound (all cores)", total[BUILD_N], total[BOUND_N], None),
        ("bound, all cores/1 core", total[BOUND_N], total[BOUND_1], None),
    ):
        value = ratio(a, b)
        met = f">= {target}: {'yes' if value.median >= target else 'no'}" if target else ""
        found.append(["", "", f"{label} = {value}", met])
    return found


def main() -> None:
    parser = arguments(__doc__, "build_speed", rounds=3, quick_rounds=1, cpu=False)
    parser.add_argument("--manual_dir", help="build the first videos of these manifests instead")
    args = parser.parse_args()
    scratch = os.path.join(args.out, "scratch")
    shutil.rmtree(scratch, ignore_errors=True)
    videos = build_set(args)
    found = rows(measure(videos, scratch, args.rounds))
    print(f"Build speed, {len(videos.paths)} videos, nproc={os.cpu_count()}; "
          f"{rounds_note(args.rounds)}\n")  # fmt: skip
    print("\n".join(table(["Variant", "Result", "Ratio", "Target"], found)))


if __name__ == "__main__":
    main()
