"""Rebuilding a changed dataset: the CPU of an --overwrite rebuild against a clean build of it.

One run. N synthetic 10-s 1280x720 H.264 videos (~0.65 core-s each to encode, Kinetics-like) are
built with `num_workers=0`, the encoding cache kept (the default); then the manifest grows by
10% and the same data dir is rebuilt with --overwrite; then one video file is replaced under
its name and rebuilt again. Each rebuild is set against a clean build of the same inputs (a
fresh data dir, nothing kept). CPU: the build process's and its workers' user + system seconds,
imports excluded (`builds.build_dataset`). Also: an unchanged rebuild (the check alone), and
the kept cache's bytes against the dataset's.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import time

import builds
import timing
import video_sets

CONFIG = {"name": "rebuild", "num_workers": 0}
CLEAN = {**CONFIG, "keep_cache": False}


def write_manifest(manual_dir: str, videos: list[str]) -> None:
    os.makedirs(manual_dir, exist_ok=True)
    lines = "".join(f"{path} class{i % 4}\n" for i, path in enumerate(videos))
    pathlib.Path(manual_dir, "train.txt").write_text(lines)


def cpu(result: dict) -> float:
    return result["build_process_cpu"] + result["workers_cpu"]


def folder_bytes(folder: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def clean_build(manual_dir: str, out: str) -> dict:
    """A build of `manual_dir` into a fresh data dir, removed after."""
    data_dir = os.path.join(out, "clean")
    shutil.rmtree(data_dir, ignore_errors=True)
    result = builds.build_dataset(manual_dir, data_dir, CLEAN)
    shutil.rmtree(data_dir, ignore_errors=True)
    return result


def check_at_scale(out: str, lines: int) -> tuple[float, float, float]:
    """CPU s, s and MiB of the record of the check a build makes over a prepared dataset, for
    `lines` manifest lines of absent files (Kinetics 700: 650k): manifests read and checked, a
    stat each, the record written (by the first build) and read back, the two compared."""
    from video_tfrecords import VideoConfig
    from video_tfrecords.ingest import manifest, provenance

    manual_dir = pathlib.Path(out, "scale")
    manual_dir.mkdir(parents=True, exist_ok=True)
    (manual_dir / "train.txt").write_text(
        "".join(f"k700/c{i % 700}/{i:07d}_000010_000020.mp4 c{i % 700}\n" for i in range(lines))
    )
    config = VideoConfig(name="default")
    provenance.write(
        manual_dir, provenance.collect(manual_dir, manifest.read_dataset(manual_dir), config)
    )

    def check():
        current = provenance.collect(manual_dir, manifest.read_dataset(manual_dir), config)
        if provenance.differences(provenance.read(manual_dir), current):
            raise RuntimeError("the same inputs differ")

    start = time.perf_counter()
    used = timing.cpu_time(check)
    seconds = time.perf_counter() - start
    size = (manual_dir / provenance.FILE).stat().st_size / 2**20
    shutil.rmtree(manual_dir)
    return used, seconds, size


def main() -> None:
    parser = timing.arguments(__doc__, "rebuild")
    parser.add_argument(
        "--videos", type=int, default=100, help="videos before the growth (see performance.md)"
    )
    args = parser.parse_args()
    count, height, width, frames = (
        (10, 96, 128, 50) if args.quick else (args.videos, 720, 1280, 300)
    )
    grown = count + max(1, count // 10)
    out = os.path.abspath(args.out)
    sources = video_sets.synthetic_videos(
        os.path.join(out, f"videos_{height}p"), grown + 1, frames, height, width
    )
    videos, spare = (
        [os.path.join(out, "set", os.path.basename(p)) for p in sources[:-1]],
        sources[-1],
    )
    os.makedirs(os.path.join(out, "set"), exist_ok=True)
    for source, path in zip(sources, videos):
        shutil.copyfile(source, path)  # a copy: one of them gets replaced
    manual_dir, data_dir = os.path.join(out, "manual"), os.path.join(out, "data")
    shutil.rmtree(data_dir, ignore_errors=True)

    timing.log(f"building {count} videos")
    write_manifest(manual_dir, videos[:count])
    first = builds.build_dataset(manual_dir, data_dir, CONFIG)
    timing.log(f"the manifest grown to {grown}: rebuild, then a clean build")
    write_manifest(manual_dir, videos[:grown])
    grown_rebuild = builds.build_dataset(manual_dir, data_dir, CONFIG, overwrite=True)
    grown_clean = clean_build(manual_dir, out)
    dataset = pathlib.Path(data_dir, "video_tfrecords", "rebuild")
    cache = pathlib.Path(data_dir, "downloads", "video_tfrecords_cache", "rebuild")
    dataset_size, cache_size = folder_bytes(dataset), folder_bytes(cache)
    timing.log("unchanged: the check alone")
    unchanged = builds.build_dataset(manual_dir, data_dir, CONFIG)
    timing.log("one video replaced: rebuild, then a clean build")
    shutil.copyfile(spare, videos[0])
    replaced_rebuild = builds.build_dataset(manual_dir, data_dir, CONFIG, overwrite=True)
    replaced_clean = clean_build(manual_dir, out)
    shutil.rmtree(data_dir, ignore_errors=True)

    timing.log("the check at scale")
    lines = 10_000 if args.quick else 650_000
    check_cpu, check_seconds, record_size = check_at_scale(out, lines)

    size = f"{width}x{height}, {frames} frames"
    line = lambda r: f"{cpu(r):.2f} CPU s ({r['seconds']:.1f} s)"
    rows = [
        ["first build", f"{count} videos ({size})", line(first), "", ""],
        ["manifest grown by 10%", f"--overwrite, {grown} videos", line(grown_rebuild), "", ""],
        ["", "clean build of them", line(grown_clean), "", ""],
        ["", "", "", f"{cpu(grown_rebuild) / cpu(grown_clean):.3f}", "<= 0.2"],
        ["one video file replaced", f"--overwrite, {grown} videos", line(replaced_rebuild), "", ""],
        ["", "clean build of them", line(replaced_clean), "", ""],
        ["", "", "", f"{cpu(replaced_rebuild) / cpu(replaced_clean):.3f}", "<= 0.1"],
        ["unchanged", "the check, nothing built", line(unchanged), "", ""],
        [
            "",
            f"the check of {lines:,} lines (absent files)",
            f"{check_cpu:.2f} CPU s ({check_seconds:.1f} s; record {record_size:.0f} MiB)",
            "",
            "",
        ],
        [
            "kept cache",
            f"{cache_size / 2**20:.1f} MiB for a {dataset_size / 2**20:.1f} MiB dataset",
            "",
            f"{cache_size / dataset_size:.3f}",
            "",
        ],
    ]
    header = ["Rebuild", "Variant", "Result", "Ratio", "Target"]
    print("\n".join(timing.table(header, rows)))


if __name__ == "__main__":
    main()
