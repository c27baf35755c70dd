"""make_manifests kinetics on 100k empty videos in class folders and a 100k-line CSV, then the
build's check of the manifests it wrote.

Finding 650k videos must be one walk of --videos, not a glob per CSV line. 95% of the lines found
(by full name or bare id), 5% absent, plus files no line names. Times the command line (imports
included), the walk alone, the whole conversion, and the build's manifest check (warm page cache).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from timing import arguments, log, median, table
from video_tfrecords.ingest import manifest, provenance
from video_tfrecords.make_manifests import common, kinetics


def make_set(root: str, files: int, classes: int) -> tuple[str, str]:
    """Writes `files` empty videos in class folders and CSVs (train, validate: one line in 16)
    naming 95% of them plus 5% absent."""
    rng = random.Random(0)
    videos, annotations = os.path.join(root, "videos"), os.path.join(root, "annotations")
    os.makedirs(annotations)
    for c in range(classes):
        os.makedirs(os.path.join(videos, f"class {c:03d} (x)"))
    header = "label,youtube_id,time_start,time_end,split,is_cc"
    rows = {"train": [header], "validate": [header]}
    for i in range(files):
        label, video_id = f"class {i % classes:03d} (x)", f"-{i:010d}"
        start = rng.randrange(0, 300)
        name = f"{video_id}_{start:06d}_{start + 10:06d}" if i % 2 else video_id
        if i % 20 != 19:  # 5% absent
            ext = "mp4" if i % 7 else "webm"
            open(os.path.join(videos, label, f"{name}.{ext}"), "wb").close()
        else:  # a file no line names keeps the file count at `files`
            open(os.path.join(videos, label, f"other{i}.mp4"), "wb").close()
        split = "validate" if i % 16 == 15 else "train"
        rows[split].append(f'"{label}",{video_id},{start},{start + 10},{split},0')
    for split, lines in rows.items():
        with open(os.path.join(annotations, f"{split}.csv"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return annotations, videos


def check(manual_dir: str) -> tuple[float, float]:
    """Seconds to read and check the manifests, and to find the videos in several splits."""
    started = time.perf_counter()
    dataset = manifest.read_dataset(manual_dir)
    read = time.perf_counter() - started
    files = {split: {e.path: provenance.resolve(manual_dir, e.path) for e in entries}
             for split, entries in dataset.splits.items()}  # as the build's record holds them
    started = time.perf_counter()
    shared = manifest.in_several_splits(dataset.splits, files)
    assert shared == [], shared  # Kinetics' splits share no video
    return read, time.perf_counter() - started


def main() -> None:
    parser = arguments(__doc__, rounds=3, quick_rounds=1, cpu=False)
    parser.add_argument("--files", type=int, default=100_000, help="videos and CSV lines")
    parser.add_argument("--classes", type=int, default=400)
    parser.add_argument("--out", help="folder to write the set in (removed after); default: a temp")
    args = parser.parse_args()
    if args.quick:  # 2,000 files
        args.files, args.classes = 2_000, 40
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    root = tempfile.mkdtemp(prefix="manifest_scan-", dir=args.out)
    try:
        started = time.perf_counter()
        annotations, videos = make_set(root, args.files, args.classes)
        log(f"set written in {time.perf_counter() - started:.1f} s")
        command = [sys.executable, "-m", "video_tfrecords.make_manifests", "kinetics"]
        times = {name: [] for name in (
            "command line", "walk (VideoIndex)", "conversion, in-process",
            "manifest check (`read_dataset`)", "videos in several splits")}  # fmt: skip
        for number in range(args.rounds):
            out = os.path.join(root, f"out{number}")
            started = time.perf_counter()
            subprocess.run([*command, "--annotations", annotations, "--videos", videos, "--out",
                            out], check=True, stdout=subprocess.DEVNULL)  # fmt: skip
            times["command line"].append(time.perf_counter() - started)
            started = time.perf_counter()
            common.VideoIndex(videos)
            times["walk (VideoIndex)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            result = kinetics(annotations, videos, out + "b")
            times["conversion, in-process"].append(time.perf_counter() - started)
            read, shared = check(out)
            times["manifest check (`read_dataset`)"].append(read)
            times["videos in several splits"].append(shared)
        found, missing = sum(result.splits.values()), result.missing
        print(f"{args.files:,} files, {args.files:,} CSV lines: {found:,} found, {missing:,} "
              f"missing\nmedian of {args.rounds} rounds (min-max), seconds\n")  # fmt: skip
        rows = [[name, f"{median(v):.2f} ({min(v):.2f}-{max(v):.2f})"] for name, v in times.items()]
        print("\n".join(table(["what", "seconds"], rows)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
