"""make_manifests kinetics on 100k empty videos in class folders and a 100k-line CSV.

Kinetics-700 has 650k videos: finding them must be one walk of --videos, not a glob per
CSV line. The set is 95% found (half by the downloaders' full name, half by bare id),
5% absent as in real downloads, plus files no line names. Times the command line (its
imports included) and, in-process, the walk alone and the whole conversion. The files
were just written, so the walk reads a warm page cache; a cold disk is slower.

    python benchmarks/run.py manifest_scan [--files 100000] [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from video_tfrecords.make_manifests import common, kinetics


def make_set(root: str, files: int, classes: int) -> tuple[str, str]:
    """Writes `files` empty videos in class folders and a CSV naming 95% of them plus 5% absent."""
    rng = random.Random(0)
    videos, annotations = os.path.join(root, "videos"), os.path.join(root, "annotations")
    os.makedirs(annotations)
    for c in range(classes):
        os.makedirs(os.path.join(videos, f"class {c:03d} (x)"))
    rows = ["label,youtube_id,time_start,time_end,split,is_cc"]
    for i in range(files):
        label, video_id = f"class {i % classes:03d} (x)", f"-{i:010d}"
        start = rng.randrange(0, 300)
        name = f"{video_id}_{start:06d}_{start + 10:06d}" if i % 2 else video_id
        if i % 20 != 19:  # 5% absent
            ext = "mp4" if i % 7 else "webm"
            open(os.path.join(videos, label, f"{name}.{ext}"), "wb").close()
        else:  # a file no line names keeps the file count at `files`
            open(os.path.join(videos, label, f"other{i}.mp4"), "wb").close()
        rows.append(f'"{label}",{video_id},{start},{start + 10},train,0')
    with open(os.path.join(annotations, "train.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    return annotations, videos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000, help="videos and CSV lines")
    parser.add_argument("--classes", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3, help="timings per variant (median)")
    parser.add_argument("--quick", action="store_true", help="2,000 files, one round")
    parser.add_argument("--out", help="folder to write the set in (removed after); default: a temp")
    args = parser.parse_args()
    if args.quick:
        args.files, args.classes, args.rounds = 2_000, 40, 1
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    root = tempfile.mkdtemp(prefix="manifest_scan-", dir=args.out)
    try:
        started = time.perf_counter()
        annotations, videos = make_set(root, args.files, args.classes)
        print(f"set written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        command = [sys.executable, "-m", "video_tfrecords.make_manifests", "kinetics"]
        times = {"command line": [], "walk (VideoIndex)": [], "conversion, in-process": []}
        for number in range(args.rounds):
            out = os.path.join(root, f"out{number}")
            started = time.perf_counter()
            subprocess.run(
                [*command, "--annotations", annotations, "--videos", videos, "--out", out],
                check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            times["command line"].append(time.perf_counter() - started)
            started = time.perf_counter()
            common.VideoIndex(videos)
            times["walk (VideoIndex)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            result = kinetics(annotations, videos, out + "b")
            times["conversion, in-process"].append(time.perf_counter() - started)
        found, missing = result.splits["train"], result.missing
        print(
            f"{args.files:,} files, {args.files:,} CSV lines: {found:,} found, {missing:,} missing"
        )
        print(f"median of {args.rounds} rounds (min-max), seconds\n")
        print("| what | seconds |\n| --- | --- |")
        for name, values in times.items():
            median, low, high = statistics.median(values), min(values), max(values)
            print(f"| {name} | {median:.2f} ({low:.2f}-{high:.2f}) |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
