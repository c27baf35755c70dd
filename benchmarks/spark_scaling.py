"""Spark build: wall time on 2 executor cores against 1, and the driver planning 650k videos.

Each core count builds the same 1280x720 videos in a process of its own into a fresh data dir, the
driver's start-up (JVM, session, TensorFlow) timed apart; the floor is the same videos encoded by
`encoding.encode` in a process pool of 1 and of 2, no Spark. Planning:
`engines/grouped.tasks_in_groups` over a synthetic manifest of absent files (a stat each all the
same), plus pickling the groups.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import time

import builds
import timing
import video_sets

CONFIG = "default"  # short side 256, q90


def child(cores: int, manual_dir: str, data_dir: str) -> None:
    """One build on `local[cores]`; prints its timings as JSON."""
    from video_tfrecords import spark_build

    start = time.perf_counter()
    import tensorflow  # noqa: F401  what TFDS's builder imports first, a driver start-up cost

    spark = spark_build.session(f"local[{cores}]")
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter()
    spark_build.build(spark, manual_dir, data_dir, CONFIG)
    done = time.perf_counter()
    spark.stop()
    print(json.dumps({"start": started - start, "build": done - started}))


def child_floor(workers: int, manual_dir: str, data_dir: str) -> None:
    """The videos encoded by a pool of `workers` processes, no Spark; prints its seconds."""
    import multiprocessing

    import tensorflow_datasets as tfds

    from video_tfrecords.ingest import encoding
    from video_tfrecords.ingest.run import BuildRun
    from video_tfrecords.spark_build import video_config

    builder = tfds.builder("video_tfrecords", config=video_config(CONFIG), data_dir=data_dir)
    run = BuildRun(builder.info, builder.builder_config)
    tasks = run.encoding_tasks(manual_dir, os.path.join(data_dir, "downloads"), decoder_threads=1)
    every = [task for split_tasks in tasks.values() for task in split_tasks]
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, initializer=encoding.init_worker) as pool:
        pool.map(abs, range(workers))  # the workers started before the clock
        start = time.perf_counter()
        pool.map(encoding.encode, every, chunksize=1)
        print(json.dumps({"build": time.perf_counter() - start}))


def child_seconds(kind: str, cores: int, manual_dir: str, data_dir: str) -> dict:
    """One child's timings (`--child`: a Spark build, `--floor`: the pool) on a fresh data dir."""
    shutil.rmtree(data_dir, ignore_errors=True)
    script = os.path.abspath(__file__)
    result = builds.json_child([sys.executable, script, kind, str(cores), manual_dir, data_dir])
    shutil.rmtree(data_dir, ignore_errors=True)
    return result


def planning_seconds(out: str, lines: int) -> tuple[float, float, int]:
    """(seconds to plan, seconds to pickle the groups, groups) for a manifest of `lines` videos
    in 400 classes, planned for a cluster of 800 cores."""
    import tensorflow_datasets as tfds

    from video_tfrecords.engines import grouped
    from video_tfrecords.ingest.run import BuildRun
    from video_tfrecords.spark_build import video_config

    manual_dir = os.path.join(out, f"plan_{lines}")
    os.makedirs(manual_dir, exist_ok=True)
    with open(os.path.join(manual_dir, "train.txt"), "w") as f:
        f.writelines(f"videos/class_{i % 400}/{i:07d}.mp4 class_{i % 400}\n" for i in range(lines))
    data_dir = os.path.join(out, "plan_data")
    builder = tfds.builder("video_tfrecords", config=video_config(CONFIG), data_dir=data_dir)
    start = time.perf_counter()
    run = BuildRun(builder.info, builder.builder_config)
    _, groups = grouped.tasks_in_groups(run, manual_dir, data_dir, cores=800)
    planned = time.perf_counter()
    shipped = len(pickle.dumps(groups, protocol=pickle.HIGHEST_PROTOCOL))
    pickled = time.perf_counter()
    timing.log(f"planned {lines} videos: {len(groups)} groups, {shipped / 2**20:.0f} MiB pickled")
    return planned - start, pickled - planned, len(groups)


def main() -> None:
    if sys.argv[1:2] in (["--child"], ["--floor"]):
        run = child if sys.argv[1] == "--child" else child_floor
        run(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        return
    parser = timing.arguments(__doc__, "spark")
    parser.add_argument("--videos", type=int, default=32, help="videos in the build (1280x720)")
    parser.add_argument("--plan_lines", type=int, default=650_000, help="manifest lines to plan")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    count, frames, height, width = (4, 30, 96, 128) if args.quick else (args.videos, 300, 720, 1280)
    lines = 2000 if args.quick else args.plan_lines
    folder = os.path.join(out, f"videos_{height}p_{frames}")
    videos = video_sets.synthetic_videos(folder, count, frames, height, width)
    manual_dir = video_sets.video_set(os.path.join(out, "manual"), videos).manual_dir
    results, floor = {}, {}
    for kind, found in (("--child", results), ("--floor", floor)):  # Spark, then the pool
        for cores in (1, 2):
            found[cores] = child_seconds(kind, cores, manual_dir, os.path.join(out, "data"))
            timing.log(f"{count} videos, {kind[2:]}, {cores} cores: {found[cores]}")
    plan, pickling, groups = planning_seconds(out, lines)
    one, two = results[1]["build"], results[2]["build"]
    header = ["Benchmark", "Variant", "Result", "Ratio", "Target"]
    rows = [["Spark build", f"{count} videos {width}x{height}, {frames} frames, `{CONFIG}`, "
             f"local[{cores}]", f"{results[cores]['build']:.1f} s (driver start-up "
             f"{results[cores]['start']:.1f} s apart)", "", ""] for cores in (1, 2)]
    rows.append(["Spark build", "2 cores / 1 core", "", f"{two / one:.3f}", "<= 0.6"])
    rows.append(["floor: encoding alone, no Spark", "a process pool of 1 and of 2",
                 f"{floor[1]['build']:.1f} s / {floor[2]['build']:.1f} s",
                 f"{floor[2]['build'] / floor[1]['build']:.3f}", ""])
    rows.append(["Spark plan", f"{lines} manifest lines, {groups} groups",
                 f"{plan:.1f} s planning + {pickling:.1f} s pickling", "", "< 60 s"])  # fmt: skip
    print("\n".join(timing.table(header, rows)))


if __name__ == "__main__":
    main()
