"""Overview: loading clips (tfds.load + ClipDecoder vs the alternatives), build speed, storage.

Loading 64-frame clips against TFDS's full decode, mp4 seeks, raw frames and the JPEG-decode
bound; build throughput against its bound on one core and on all; bytes per video of each
storage format. One markdown table.
"""

from __future__ import annotations

import datetime
import glob
import os
import platform
import shutil
import time
import zlib
from dataclasses import dataclass
from functools import partial

import builds
import timing
import video_sets
from timing import arguments, log

NUM_FRAMES = 64
SHORT_SIDE, QUALITY = 256, 90  # the default config's
LOAD_SIZE = (256, 340)  # (height, width) of the load videos: Kinetics' usual 340x256
BUILD_SIZE = (360, 480)  # build sources: 360p, brought down to 256 by the default config
FRAMES = 250  # 10 s at 25 fps

A = "(a) tfds.load + ClipDecoder(64)"
B = "(b) TFDS default decode of every frame, slice 64"
C = "(c) OpenCV seek + decode 64 frames of the mp4"
D = "(d) bound: decode_jpeg of exactly the clip's JPEGs, in memory"
E = "(e) raw uint8 frames in TFRecord, slice 64"
BOUND_1 = "bound, 1 core: OpenCV decode + resize + imencode"
BUILD_1 = "download_and_prepare, num_workers=1, same core"
BOUND_N = "bound, all cores: one process per core"
BUILD_N = "download_and_prepare, num_workers=0 (one per core)"
Q90 = "JPEG q90 records (default config)"
RAW = "raw uint8 records"
GZIP_LEVEL = 6  # zlib's default, what TFRecordOptions(compression_type="GZIP") uses
CHUNK = 1 << 20


@dataclass(frozen=True)
class Size:
    """How much of everything a run does."""

    load_videos: int
    build_videos: int
    reps: int
    seconds: float  # minimum duration of one load measurement
    build_reps: int
    gzip_sample: int  # bytes compressed per format to measure the gzip ratio
    cli: bool  # also time `tfds build` from the command line once
    copies: int  # times the load set lists each of its videos


SIZES = {
    "quick": Size(4, 4, 2, 1.0, 1, 16 << 20, False, 4),
    "full": Size(8, 16, 5, 2.0, 3, 64 << 20, True, 8),
}


def row(benchmark: str, variant: str, result="", ratio="", target="", value=0.0) -> list[str]:
    """A line of the table; with a `target` (">= 0.9"), PASS or FAIL for `value`."""
    status = ""
    if target:
        op, threshold = target.split()
        passed = value >= float(threshold) if op == ">=" else value <= float(threshold)
        status = "PASS" if passed else "FAIL"
    return [benchmark, variant, result, ratio, target, status]


def ratio_row(benchmark: str, label: str, value: timing.Ratio, target: str = "") -> list[str]:
    """A row holding one ratio, checked against `target` when given."""
    return row(benchmark, "", "", f"{label} = {value}", target, value.median)


# -- inputs ---------------------------------------------------------------------------------------


def inputs(out: str, manual_dir: str | None, size: Size) -> dict[str, video_sets.VideoSet]:
    """The video sets, with manifests: load (copies), q75 (load videos once), build."""
    if manual_dir:
        load = video_sets.user_videos(manual_dir, size.load_videos, NUM_FRAMES)
        build = video_sets.user_videos(manual_dir, size.build_videos, 1)
    else:
        load = synthetic(out, "load", size.load_videos, *LOAD_SIZE)
        build = synthetic(out, "build", size.build_videos, *BUILD_SIZE)
    manual = partial(os.path.join, out, "manual")
    return {
        "load": video_sets.video_set(manual("load"), load, size.copies),
        "q75": video_sets.video_set(manual("q75"), load),
        "build": video_sets.video_set(manual("build"), build),
    }


def synthetic(out: str, kind: str, count: int, height: int, width: int) -> list[str]:
    """Synthetic mp4s in a folder named for their size (kept between runs)."""
    folder = os.path.join(out, "videos", f"{kind}_{FRAMES}x{height}x{width}")
    return video_sets.synthetic_videos(folder, count, FRAMES, height, width)


def build_load_datasets(sets: dict, data_dir: str) -> None:
    """The load set under the default config (q90), its videos once at q75; built afresh."""
    shutil.rmtree(data_dir, ignore_errors=True)
    for name, config in (("load", "default"), ("q75", {"name": "q75", "jpeg_quality": 75})):
        builds.build_dataset(sets[name].manual_dir, data_dir, config)
        log(f"built {config}: {sets[name].examples} examples")


# -- sections -------------------------------------------------------------------------------------


def load_section(load_set, data_dir: str, raw_dir: str, size: Size) -> dict[str, list[float]]:
    """Interleaved clips/s of every loading variant."""
    import overview_loaders as loaders  # TensorFlow, only here

    def rate(make, *args):
        """Measures clips/s of a new iterator over `make(*args)` (a dataset or a generator)."""
        return partial(timing.items_per_second, lambda: iter(make(*args)), 2, size.seconds, 4)

    videos = loaders.stored_frames(data_dir, size.load_videos)
    measures = {
        A: rate(loaders.clip_decoder, data_dir, NUM_FRAMES),
        B: rate(loaders.full_decode, data_dir, NUM_FRAMES),
        C: rate(loaders.opencv_seek, load_set.paths, NUM_FRAMES, os.cpu_count()),
        D: rate(loaders.jpeg_bound, videos, NUM_FRAMES),
    }
    if loaders.fits_in_memory(videos):
        raw = loaders.write_raw_records(videos, raw_dir)
        measures[E] = rate(loaders.raw_frames, raw, NUM_FRAMES)
    log(f"loading: {len(measures)} variants x {size.reps} reps")
    return timing.interleave(measures, size.reps)


def load_rows(rates: dict[str, list[float]]) -> list[list[str]]:
    """Every variant's rate, and (a) against the others."""
    rows = []
    for name in (A, B, C, D, E):
        if name in rates:
            rate = timing.median(rates[name])
            result = f"{rate:.1f} clips/s = {rate * NUM_FRAMES:.0f} frames/s"
            rows.append(row("Load 64-frame clips", name, result))
    targets = (("a/d", D, ">= 0.9"), ("a/b", B, ">= 3"), ("a/c", C, ">= 3"), ("a/e", E, ""))
    for label, other, target in targets:
        if other in rates:
            value = timing.ratio(rates[A], rates[other])
            rows.append(ratio_row("Load 64-frame clips", label, value, target))
    return rows


def build_section(build_set, scratch: str, size: Size) -> dict[str, list[builds.Rate]]:
    """Interleaved videos/s of the builder and the bound, on one core and on all."""
    videos, count = build_set.paths, len(build_set.paths)
    build = partial(builds.build_rate, build_set.manual_dir)
    w1, w0 = {"name": "w1", "num_workers": 1}, {"name": "w0", "num_workers": 0}
    measures = {
        BOUND_1: partial(builds.bound_one_core, videos, SHORT_SIDE, QUALITY),
        BUILD_1: partial(build, os.path.join(scratch, "build1"), w1, count, True),
        BOUND_N: partial(builds.bound_parallel, videos, SHORT_SIDE, QUALITY, os.cpu_count()),
        BUILD_N: partial(build, os.path.join(scratch, "buildn"), w0, count, False),
    }
    log(f"building: {count} videos, {len(measures)} variants x {size.build_reps} reps")
    return timing.interleave(measures, size.build_reps)


def build_rows(rates: dict, build_set, scratch: str, size: Size) -> list[list[str]]:
    """Rates, the two targets, and start-up costs (measured here, after the rates)."""
    total = {name: [r.total for r in results] for name, results in rates.items()}
    steady = {name: [r.steady for r in results] for name, results in rates.items()}
    rows = []
    for name in (BOUND_1, BUILD_1, BOUND_N, BUILD_N):
        result = f"{timing.median(total[name]):.2f} videos/s"
        if name in (BUILD_1, BUILD_N):
            result += f"; steady state {timing.median(steady[name]):.2f}"
        rows.append(row("Build", name, result))
    itself = "bound, all cores/1 core (what the cores give the bound itself)"
    ratios = [
        ("single/bound (1 core)", total[BUILD_1], total[BOUND_1], ">= 0.8"),
        ("parallel/single", total[BUILD_N], total[BUILD_1], ">= 1.7"),
        ("parallel/single, steady", steady[BUILD_N], steady[BUILD_1], ""),
        ("parallel/bound (all cores)", total[BUILD_N], total[BOUND_N], ""),
        (itself, total[BOUND_N], total[BOUND_1], ""),
    ]
    rows += [ratio_row("Build", label, timing.ratio(a, b), limit) for label, a, b, limit in ratios]
    pool = builds.pool_start_seconds(os.cpu_count())
    workers = f"start-up of the {os.cpu_count()} build workers"
    rows.append(row("Build", workers, f"{pool:.2f} s per build"))
    if size.cli:
        count = len(build_set.paths)
        config = {"name": "cli", "num_workers": 0}
        cli = builds.cli_build_seconds(build_set.manual_dir, os.path.join(scratch, "cli"), config)
        variant = "`tfds build` CLI, num_workers=0: wall incl. imports"
        rows.append(row("Build", variant, f"{cli:.1f} s for {count} videos = {count / cli:.2f}/s"))
    return rows


def record_files(data_dir: str, config: str) -> list[str]:
    """The TFRecord shards of a built config."""
    return sorted(glob.glob(os.path.join(data_dir, "video_tfrecords", config, "*", "*.tfrecord*")))


def gzip_ratio(paths: list[str], sample: int) -> float:
    """Compressed / plain size of the first `sample` bytes of the files, gzip at level 6."""
    plain = packed = 0
    for path in paths:
        compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: gzip framing
        with open(path, "rb") as f:
            while plain < sample and (chunk := f.read(min(CHUNK, sample - plain))):
                plain += len(chunk)
                packed += len(compressor.compress(chunk))
        packed += len(compressor.flush())
        if plain >= sample:
            break
    return packed / plain


def storage_rows(sets, data_dir: str, raw_dir: str, sample: int) -> list[list[str]]:
    """Bytes per video, plain and gzipped: JPEG q90 and q75 records, raw uint8 records, mp4s."""
    raw = sorted(glob.glob(os.path.join(raw_dir, "*")))
    formats = {
        Q90: (record_files(data_dir, "default"), sets["load"].examples),
        "JPEG q75 records": (record_files(data_dir, "q75"), sets["q75"].examples),
        RAW: (raw, len(raw)),
        "source mp4 (H.264)": (sets["load"].paths, len(sets["load"].paths)),
    }
    rows, per_video = [], {}
    for name, (paths, videos) in formats.items():
        if paths:
            per_video[name] = sum(os.path.getsize(p) for p in paths) / videos
            packed = gzip_ratio(paths, sample)  # compressed / plain
            result = f"{per_video[name] / 1e6:.1f} MB; gzip {per_video[name] * packed / 1e6:.1f} MB"
            rows.append(row("Storage per video", name, result, f"gzip/plain = {packed:.3f}"))
    if RAW in per_video:
        q90 = per_video[Q90] / per_video[RAW]
        rows.append(row("Storage per video", "", "", f"q90/raw = {q90:.3f}", "<= 0.1", q90))
    note = f"(gzip level {GZIP_LEVEL}, ratio measured on up to {sample >> 20} MB of each format)"
    return rows + [row("Storage per video", note)]


def main() -> None:
    """Runs every section and prints the table."""
    parser = arguments(__doc__, "overview")
    parser.add_argument("--manual_dir", help="take the load and build videos from these manifests")
    parser.add_argument("--real", action="store_true", help="real footage (bikes.mp4 windows)")
    args = parser.parse_args()
    if args.real:
        args.manual_dir = video_sets.kinetics_like_set(os.path.join(timing.HERE, "out", "real"))
    size = SIZES["quick" if args.quick else "full"]
    start = time.perf_counter()
    scratch, data_dir, raw_dir = (os.path.join(args.out, f) for f in ("scratch", "data", "raw"))
    for folder in (scratch, raw_dir):
        shutil.rmtree(folder, ignore_errors=True)
    sets = inputs(args.out, args.manual_dir, size)
    build_load_datasets(sets, data_dir)
    load = load_section(sets["load"], data_dir, raw_dir, size)
    storage = storage_rows(sets, data_dir, raw_dir, size.gzip_sample)
    build = build_rows(build_section(sets["build"], scratch, size), sets["build"], scratch, size)
    title = (f"video_tfrecords overview, {datetime.datetime.now():%Y-%m-%d %H:%M}, "
             f"nproc={os.cpu_count()}, {platform.machine()}, {'quick' if args.quick else 'full'} "
             f"run, {(time.perf_counter() - start) / 60:.1f} min")  # fmt: skip
    header = ["Benchmark", "Variant", "Result", "Ratio (median, min-max over reps)", "Target"]
    rows = load_rows(load) + build + storage
    print(f"### {title}\n")
    print("\n".join(timing.table([*header, "Status"], rows)))


if __name__ == "__main__":
    main()
