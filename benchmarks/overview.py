"""Overview: loading clips (tfds.load + ClipDecoder vs the alternatives), build speed, storage.

Loading 64-frame clips against TFDS's full decode, mp4 seeks, raw frames and
the JPEG-decode bound; build throughput against its bound on one core and on
all; bytes per video of each storage format.

    python benchmarks/run.py overview            # full run (< 10 min on 2 cores, data included)
    python benchmarks/run.py overview --quick    # smoke run (~2 min)
    python benchmarks/run.py overview --real     # real footage (bikes.mp4 windows, via pip)
    python benchmarks/run.py overview --manual_dir DIR   # your videos instead

Prints one markdown table (progress goes to stderr). Variants are measured in
interleaved repetitions; ratios are medians of per-repetition ratios, so machine
noise hits both sides of a ratio alike.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import time
from dataclasses import dataclass
from functools import partial

import build_runs
import storage_bytes
import timing
import video_sets
from timing import Stream, log

NUM_FRAMES = 64
SHORT_SIDE, QUALITY = 256, 90  # the default config's
LOAD_SHAPE = (256, 340)  # (height, width) of the load videos: Kinetics' usual 340x256
BUILD_SHAPE = (360, 480)  # build sources: 360p, brought down to 256 by the default config
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


@dataclass(frozen=True)
class Row:
    """One line of the table; `target` (">= 0.9") is checked against `value` when given."""

    benchmark: str
    variant: str
    result: str = ""
    ratio: str = ""
    target: str = ""
    value: float = 0.0

    def cells(self) -> list[str]:
        """The row's cells, with PASS or FAIL when it has a target."""
        status = ""
        if self.target:
            op, threshold = self.target.split()
            passed = (
                self.value >= float(threshold) if op == ">=" else self.value <= float(threshold)
            )
            status = "PASS" if passed else "FAIL"
        return [self.benchmark, self.variant, self.result, self.ratio, self.target, status]


def markdown(rows: list[Row]) -> str:
    """The table in GitHub markdown."""
    head = "| Benchmark | Variant | Result | Ratio (median, min-max over reps) | Target | Status |"
    lines = [head, "| --- | --- | --- | --- | --- | --- |"]
    return "\n".join(lines + ["| " + " | ".join(row.cells()) + " |" for row in rows])


def ratio_row(benchmark: str, label: str, value: timing.Ratio, target: str = "") -> Row:
    """A row holding one ratio, checked against `target` when given."""
    return Row(benchmark, "", "", f"{label} = {value}", target, value.median)


# -- inputs ---------------------------------------------------------------------------------------


def inputs(out: str, manual_dir: str | None, size: Size) -> dict[str, video_sets.VideoSet]:
    """The video sets, with manifests: load (copies), q75 (load videos once), build."""
    videos = os.path.join(out, "videos")
    if manual_dir:
        load = video_sets.user_videos(manual_dir, size.load_videos, NUM_FRAMES)
        build = video_sets.user_videos(manual_dir, size.build_videos, 1)
    else:
        load = synthetic(videos, "load", size.load_videos, LOAD_SHAPE)
        build = synthetic(videos, "build", size.build_videos, BUILD_SHAPE)
    manual = partial(os.path.join, out, "manual")
    return {
        "load": video_sets.video_set(manual("load"), load, size.copies),
        "q75": video_sets.video_set(manual("q75"), load),
        "build": video_sets.video_set(manual("build"), build),
    }


def synthetic(folder: str, kind: str, count: int, shape: tuple) -> list[str]:
    """Synthetic mp4s in a folder named by their size (kept between runs)."""
    height, width = shape
    start = time.perf_counter()
    folder = os.path.join(folder, f"{kind}_{FRAMES}x{height}x{width}")
    paths = video_sets.synthetic_videos(folder, count, FRAMES, height, width)
    log(
        f"{kind} videos: {count} x {FRAMES} frames {width}x{height} ({time.perf_counter() - start:.0f} s)"
    )
    return paths


def build_load_datasets(sets: dict, data_dir: str) -> None:
    """The load set under the default config (q90), its videos once at q75; built afresh."""
    shutil.rmtree(data_dir, ignore_errors=True)
    for name, config in (("load", "default"), ("q75", '{"name": "q75", "jpeg_quality": 75}')):
        build_runs.run_child(
            "build",
            f"--manual_dir={sets[name].manual_dir}",
            f"--data_dir={data_dir}",
            f"--config={config}",
        )
        log(f"built {config}: {sets[name].examples} examples")


# -- sections -------------------------------------------------------------------------------------


def load_section(load_set, data_dir: str, raw_dir: str, size: Size) -> dict[str, list[float]]:
    """Interleaved clips/s of every loading variant."""
    import overview_loaders as loaders  # TensorFlow, only here

    def fresh(make, *args, **kwargs):
        return Stream(lambda: iter(make(*args, **kwargs)))

    videos = loaders.stored_frames(data_dir, "default", size.load_videos)
    streams = {
        A: fresh(loaders.clip_decoder, data_dir, "default", NUM_FRAMES),
        B: fresh(loaders.full_decode, data_dir, "default", NUM_FRAMES),
        C: Stream(partial(loaders.opencv_seek, load_set.paths, NUM_FRAMES, os.cpu_count())),
        D: fresh(loaders.jpeg_bound, videos, NUM_FRAMES),
    }
    if loaders.fits_in_memory(videos):
        streams[E] = fresh(
            loaders.raw_frames, loaders.write_raw_records(videos, raw_dir), NUM_FRAMES
        )
    measures = {
        name: partial(timing.stream_rate, s, 2, size.seconds, 4) for name, s in streams.items()
    }
    log(f"loading: {len(measures)} variants x {size.reps} reps")
    return timing.interleave(measures, size.reps)


def load_rows(rates: dict[str, list[float]]) -> list[Row]:
    """Every variant's rate, and (a) against the others."""
    rows = []
    for name in (A, B, C, D, E):
        if name in rates:
            rate = timing.median(rates[name])
            rows.append(
                Row(
                    "Load 64-frame clips",
                    name,
                    f"{rate:.1f} clips/s = {rate * NUM_FRAMES:.0f} frames/s",
                )
            )
    for label, other, target in (
        ("a/d", D, ">= 0.9"),
        ("a/b", B, ">= 3"),
        ("a/c", C, ">= 3"),
        ("a/e", E, ""),
    ):
        if other in rates:
            rows.append(
                ratio_row(
                    "Load 64-frame clips", label, timing.ratio(rates[A], rates[other]), target
                )
            )
    return rows


def build_section(build_set, scratch: str, size: Size) -> dict[str, list[build_runs.Rate]]:
    """Interleaved videos/s of the builder and the bound, on one core and on all."""
    videos, count = build_set.paths, len(build_set.paths)
    build = partial(build_runs.build_rate, build_set.manual_dir)
    measures = {
        BOUND_1: partial(build_runs.bound_one_core, videos, SHORT_SIDE, QUALITY),
        BUILD_1: partial(
            build, os.path.join(scratch, "build1"), {"name": "w1", "num_workers": 1}, count, True
        ),
        BOUND_N: partial(build_runs.bound_parallel, videos, SHORT_SIDE, QUALITY, os.cpu_count()),
        BUILD_N: partial(
            build, os.path.join(scratch, "buildn"), {"name": "w0", "num_workers": 0}, count, False
        ),
    }
    log(f"building: {count} videos, {len(measures)} variants x {size.build_reps} reps")
    return timing.interleave(measures, size.build_reps)


def build_rows(rates: dict, build_set, scratch: str, size: Size) -> list[Row]:
    """Rates, the two targets, and start-up costs (measured here, after the rates)."""
    total = {name: [r.total for r in results] for name, results in rates.items()}
    steady = {name: [r.steady for r in results] for name, results in rates.items()}
    rows = []
    for name in (BOUND_1, BUILD_1, BOUND_N, BUILD_N):
        result = f"{timing.median(total[name]):.2f} videos/s"
        if name in (BUILD_1, BUILD_N):
            result += f"; steady state {timing.median(steady[name]):.2f}"
        rows.append(Row("Build", name, result))
    ratios = [
        ("single/bound (1 core)", total[BUILD_1], total[BOUND_1], ">= 0.8"),
        ("parallel/single", total[BUILD_N], total[BUILD_1], ">= 1.7"),
        ("parallel/single, steady", steady[BUILD_N], steady[BUILD_1], ""),
        ("parallel/bound (all cores)", total[BUILD_N], total[BOUND_N], ""),
        (
            "bound, all cores/1 core (what the cores give the bound itself)",
            total[BOUND_N],
            total[BOUND_1],
            "",
        ),
    ]
    rows += [
        ratio_row("Build", label, timing.ratio(a, b), target) for label, a, b, target in ratios
    ]
    pool = build_runs.pool_start_seconds(os.cpu_count())
    rows.append(
        Row("Build", f"start-up of the {os.cpu_count()} build workers", f"{pool:.2f} s per build")
    )
    if size.cli:
        count = len(build_set.paths)
        config = {"name": "cli", "num_workers": 0}
        cli = build_runs.cli_build_seconds(
            build_set.manual_dir, os.path.join(scratch, "cli"), config
        )
        variant = "`tfds build` CLI, num_workers=0: wall incl. imports"
        rows.append(Row("Build", variant, f"{cli:.1f} s for {count} videos = {count / cli:.2f}/s"))
    return rows


def storage_rows(sets, data_dir: str, raw_dir: str, sample: int) -> list[Row]:
    """Bytes per video, plain and gzipped: JPEG q90 and q75 records, raw uint8 records, mp4s."""
    raw = (
        sorted(os.path.join(raw_dir, f) for f in os.listdir(raw_dir))
        if os.path.isdir(raw_dir)
        else []
    )
    formats = [
        (storage_bytes.Q90, storage_bytes.record_files(data_dir, "default"), sets["load"].examples),
        ("JPEG q75 records", storage_bytes.record_files(data_dir, "q75"), sets["q75"].examples),
        (storage_bytes.RAW, raw, len(raw)),
        ("source mp4 (H.264)", sets["load"].paths, len(sets["load"].paths)),
    ]
    found = [storage_bytes.footprint(name, paths, n, sample) for name, paths, n in formats if paths]
    mb = lambda size: f"{size / 1e6:.1f} MB"
    rows = [
        Row("Storage per video", f.name, f"{mb(f.bytes_per_video)}; gzip {mb(f.gzip_bytes_per_video)}",
            f"gzip/plain = {f.gzip_ratio:.3f}")
        for f in found
    ]  # fmt: skip
    by_name = {f.name: f for f in found}
    if storage_bytes.RAW in by_name:
        q90 = (
            by_name[storage_bytes.Q90].bytes_per_video / by_name[storage_bytes.RAW].bytes_per_video
        )
        rows.append(Row("Storage per video", "", "", f"q90/raw = {q90:.3f}", "<= 0.1", q90))
    note = f"(gzip level 6, ratio measured on up to {sample >> 20} MB of each format)"
    return rows + [Row("Storage per video", note)]


def main() -> None:
    """Runs every section and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~2 minute smoke run")
    parser.add_argument("--manual_dir", help="take the load and build videos from these manifests")
    parser.add_argument("--real", action="store_true", help="real footage (bikes.mp4 windows)")
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "out", "overview"), help="work folder")
    args = parser.parse_args()
    if args.real:
        import real_footage

        args.manual_dir = real_footage.kinetics_like_set(os.path.join(here, "out", "real"))
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
    title = (
        f"video_tfrecords overview, {datetime.datetime.now():%Y-%m-%d %H:%M}, nproc={os.cpu_count()}, "
        f"{platform.machine()}, {'quick' if args.quick else 'full'} run, "
        f"{(time.perf_counter() - start) / 60:.1f} min"
    )
    print(f"### {title}\n\n{markdown(load_rows(load) + build + storage)}")


if __name__ == "__main__":
    main()
