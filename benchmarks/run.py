"""Benchmarks of video_tfrecords: loading clips, building, storage and build memory.

    python benchmarks/run.py            # full run (< 10 min on 2 cores, data included)
    python benchmarks/run.py --quick    # smoke run (~2 min)
    python benchmarks/run.py --manual_dir DIR   # your videos instead of synthetic ones

Prints one markdown table (progress goes to stderr) and writes a PNG chart.
Variants are measured in interleaved repetitions; ratios are medians of
per-repetition ratios, so machine noise hits both sides of a ratio alike.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import time

import report
import rows
import sections
import timing
from sections import SKIP, SKIP_TFDS, Size

SIZES = {
    "quick": Size(4, 4, 1000, 2, 1.0, 1, 16 << 20, False, 4),
    "full": Size(8, 16, 5000, 5, 2.0, 3, 64 << 20, True, 8),
}


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~2 minute smoke run")
    parser.add_argument("--manual_dir", help="take the load and build videos from these manifests")
    parser.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"),
        help="work folder (videos are kept between runs, everything else is rebuilt)",
    )
    return parser.parse_args()


def main() -> None:
    """Runs every section, prints the table, writes the chart."""
    args = parse_args()
    size = SIZES["quick" if args.quick else "full"]
    start = time.perf_counter()
    scratch = os.path.join(args.out, "scratch")
    data_dir, raw_dir = os.path.join(args.out, "data"), os.path.join(args.out, "raw")
    for folder in (scratch, raw_dir):
        shutil.rmtree(folder, ignore_errors=True)

    sets = sections.video_sets(args.out, args.manual_dir, size)
    sections.build_load_datasets(sets, data_dir)
    larger = None if args.manual_dir else sets["build"]  # synthetic 480x360 sources
    load, frames_per_video = sections.load_section(sets["load"], data_dir, raw_dir, size, larger)
    footprints = sections.storage_section(sets, data_dir, raw_dir, size)
    build = sections.build_section(sets["build"], scratch, size)
    pool, cli = sections.start_up(sets["build"], scratch, size)
    rss = sections.memory_section(sets, scratch)

    table = (
        rows.load_rows(load, frames_per_video)
        + rows.crop_rows(load)
        + rows.build_rows(build, len(sets["build"].paths), pool, cli)
        + rows.storage_rows(footprints, size.gzip_sample)
        + rows.memory_rows(rss)
    )
    title = (
        f"video_tfrecords benchmarks, {datetime.datetime.now():%Y-%m-%d %H:%M}, "
        f"nproc={os.cpu_count()}, {platform.machine()}, {'quick' if args.quick else 'full'} run, "
        f"{(time.perf_counter() - start) / 60:.1f} min"
    )
    print(f"### {title}\n")
    print(report.markdown(table))
    chart = report.chart(
        os.path.join(args.out, "benchmarks.png"),
        {name: timing.median(r) for name, r in load.items() if name not in (SKIP, SKIP_TFDS)},
        {name: timing.median([r.total for r in results]) for name, results in build.items()},
        footprints,
        [row.target for row in table if row.target is not None],
        title,
    )
    print(f"\nChart: {os.path.abspath(chart)}")


if __name__ == "__main__":
    main()
