"""Training and test recipes: their cost over a plain clip, and against mp4 readers + torchvision.

    python benchmarks/recipe_speed.py            # both parts (~10 min on 2 cores, data kept)
    python benchmarks/recipe_speed.py --quick    # a smoke run (~1 min)
    python benchmarks/recipe_speed.py --part cost --torchcodec_python /tmp/tc/bin/python

Data: peers.py's generated 340x256 sources (a keyframe every 32 frames, 250
frames at 25 fps), built with the `default` config (stored 340x256, q90).

Part `cost`, one process pinned to one core, both paths (the TF graph,
`ClipDecoder.sample` on a record's encoded frames, and the NumPy path,
`ClipSource.get`): each recipe's clip against a plain clip of the same frames
decoded whole at full size, CPU ms per clip, rounds interleaved, ratio =
median of per-round ratios (target <= 1.2):

- jitter: 16 frames, stride 2, short side 256-320, random 224 crop, flip;
- resized: 16 frames, stride 2, random-resized crop to 224 (torchvision's draw);
- test views: 10 clips x 3 crops of 256 (short side 256), 16 frames, stride 2,
  against the 10 clips at full size.

Part `peers` (peers.py's workers, each pinned to one core): SlowFast training
(32 frames, stride 2, short side 256-320, 224 crop, flip) and VideoMAE
training (16 frames, stride 4, random-resized crop 224), read by this project
without TensorFlow (`ClipSource`) and through `clip_dataset`, and by PyAV and
TorchCodec reading the mp4 (the same planned frames) and applying torchvision's
v2 transforms (`RandomShortestSize(256..320)` + `RandomCrop(224)` +
`RandomHorizontalFlip`; `RandomResizedCrop(224)`) on one thread. The mp4
readers need torchvision: run them with `--torchcodec_python` (a venv with
torch, torchvision, torchcodec and av; see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import peer_sources
import peers

from timing import log, ratio

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 11
COST_RECIPES = {
    "jitter": (
        "16 frames, stride 2, short side 256-320, 224 crop, flip",
        {"num_frames": 16, "stride": 2, "short_side": (256, 320), "crop_size": (224, 224),
         "flip": True},
        {"num_frames": 16, "stride": 2},
    ),
    "resized": (
        "16 frames, stride 2, random-resized crop 224",
        {"num_frames": 16, "stride": 2, "crop": "resized", "crop_size": (224, 224)},
        {"num_frames": 16, "stride": 2},
    ),
    "test views": (
        "10 clips x 3 crops of 256, 16 frames, stride 2",
        {"num_frames": 16, "stride": 2, "mode": "uniform", "num_clips": 10, "num_crops": 3,
         "crop_size": (256, 256), "short_side": 256},
        {"num_frames": 16, "stride": 2, "mode": "uniform", "num_clips": 10},
    ),
}  # fmt: skip
PEER_RECIPES = {
    "SlowFast train": (
        "32 frames, stride 2, short side 256-320, 224 crop, flip",
        {"num_frames": 32, "stride": 2, "short_side": (256, 320), "crop_size": (224, 224),
         "crop": "random", "flip": True, "mode": "random", "seed": SEED},
        "jitter_crop_flip",
    ),
    "VideoMAE train": (
        "16 frames, stride 4, random-resized crop 224",
        {"num_frames": 16, "stride": 4, "crop": "resized", "crop_size": (224, 224),
         "mode": "random", "seed": SEED},
        "resized_crop",
    ),
}  # fmt: skip
MP4 = ("pyav", "torchcodec")
OURS = ("tf_free", "tf")
TARGET = 2.0


def pin_one_core(cpu: int) -> None:
    """This process and its threads run on `cpu` only."""
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), {cpu})


def cost_part(data_dir: str, version: str, rounds: int, cpu: int) -> list[str]:
    """Recipe clip / plain clip, CPU time per clip on one core, TF graph and NumPy path."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    from video_tfrecords import ClipDecoder, ClipSource, EncodedFrames

    pin_one_core(cpu)
    loaded = tfds.load(
        f"video_tfrecords/default:{version}", split="train", data_dir=data_dir,
        download=False, decoders={"video": EncodedFrames()},
    )  # fmt: skip
    videos = [example["video"] for example in loaded]
    signature = [tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.int64)]

    def graph(kwargs):
        decoder = ClipDecoder(**kwargs)
        sample = tf.function(decoder.sample, input_signature=signature)
        return lambda seed: [
            sample(video, tf.constant(seed + i, tf.int64)) for i, video in enumerate(videos)
        ]

    def numpy(kwargs):
        source = ClipSource(
            "train", data_dir=data_dir, config="default", version=version, **kwargs
        )  # fmt: skip
        return lambda seed: [source.get(i, seed=seed + i) for i in range(len(source))]

    variants = {}
    for name, (_, recipe, plain) in COST_RECIPES.items():
        for path, make in (("TF graph", graph), ("NumPy", numpy)):
            variants[(name, path, "recipe")] = make(recipe)
            variants[(name, path, "plain")] = make(plain)
    for read in variants.values():
        read(0)  # warm-up: tracing, shards mapped
    times = {key: [] for key in variants}
    keys = list(variants)
    for r in range(rounds):
        shift = r % len(keys)
        for key in keys[shift:] + keys[:shift]:
            start = time.process_time()
            variants[key](1000 * (r + 1))
            times[key].append((time.process_time() - start) / len(videos))
        log(f"  cost round {r + 1}/{rounds}")
    lines = [
        f"Recipe clip against a plain clip of the same frames at full size, CPU ms per clip on "
        f"one core (median of {rounds} interleaved rounds; ratio: median (min-max) of per-round "
        f"ratios), {len(videos)} records of 340x256:",
        "",
        "| recipe | path | recipe clip | plain clip | recipe / plain | <= 1.2 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, (label, _, _) in COST_RECIPES.items():
        for path in ("TF graph", "NumPy"):
            spent, plain = times[(name, path, "recipe")], times[(name, path, "plain")]
            r = ratio(spent, plain)
            verdict = "yes" if r.median <= 1.2 else "no"
            lines.append(
                f"| {name}: {label} | {path} | {statistics.median(spent) * 1e3:.2f} | "
                f"{statistics.median(plain) * 1e3:.2f} | {r} | {verdict} |"
            )
    return lines


def peer_jobs(dataset, spec: dict, transform: str) -> dict:
    """Per reader, its job: ours read the dataset; mp4 readers decode the planned frames and
    transform them."""
    import video_tfrecords
    from video_tfrecords.clip_plan import fold_in
    from video_tfrecords.example_parser import parse_example

    plans = []
    source = video_tfrecords.ClipSource(
        "train", data_dir=dataset.data_dir, config="default", version=dataset.version,
        num_frames=1,
    )  # fmt: skip
    decoder = video_tfrecords.ClipDecoder(**spec)
    names = [os.path.basename(p) for p in dataset.sources.paths]
    for i in range(len(source)):
        example = parse_example(source.reader.read(i))  # one read: frames and file name
        frames = [bytes(f) for f in example["video"]]
        filename = bytes(example["filename"][0]).decode()
        indices = decoder.plan_np(frames, fold_in(SEED, 0))["indices"].ravel()
        plans.append((names.index(filename), [int(j) for j in indices]))
    key = f"{dataset.sources.name}/{transform}"
    ours = {
        "key": key, "data_dir": dataset.data_dir, "config": "default",
        "version": dataset.version, "spec": spec, "count": len(plans),
    }  # fmt: skip
    mp4 = {
        "key": key, "paths": list(dataset.sources.paths), "clips": plans, "resize": None,
        "transform": transform,
    }  # fmt: skip
    return {reader: ours if reader in OURS else mp4 for reader in OURS + MP4}


def peer_part(dataset, workers: dict, rounds: int) -> list[str]:
    """CPU ms per clip of every reader per recipe, and best mp4 reader / ours."""
    readers = [r for r in OURS + MP4 if r in workers]
    lines = [
        f"Training recipes against mp4 readers + torchvision, {dataset.sources.name}, CPU ms per "
        f"clip on one core (clips/s); median of {rounds} interleaved rounds; ratio: best mp4 "
        "reader's time / ours, median (min-max) of per-round ratios:",
        "",
        "| recipe | " + " | ".join(peers.SHORT[r] for r in readers)
        + " | best mp4 / ours TF-free | best mp4 / ours TF | >= 2 |",
        "| --- |" + " --- |" * (len(readers) + 3),
    ]
    for name, (label, spec, transform) in PEER_RECIPES.items():
        jobs = peer_jobs(dataset, spec, transform)
        for reader in readers:
            workers[reader].request(op="open", job=jobs[reader])
            workers[reader].request(op="run", job=jobs[reader])  # warm-up pass
        times = {r: [] for r in readers}
        for r in range(rounds):
            shift = r % len(readers)
            for reader in readers[shift:] + readers[:shift]:
                answer = workers[reader].request(op="run", job=jobs[reader])
                times[reader].append(answer["cpu"] / answer["clips"])
            last = ", ".join(f"{peers.SHORT[k]} {v[-1] * 1e3:.1f}" for k, v in times.items())
            log(f"  {name} round {r + 1}/{rounds}: {last}")
        mp4 = [r for r in MP4 if r in times]
        best = [min(values) for values in zip(*(times[r] for r in mp4))] if mp4 else []
        ratios = [ratio(best, times[r]) if best and r in times else None for r in OURS]
        reached = max((x.median for x in ratios if x is not None), default=0.0)
        lines.append(
            f"| {name}: {label} | "
            + " | ".join(peers.cell(times[r]) for r in readers)
            + " | " + " | ".join(str(x) if x else "n/a" for x in ratios)
            + f" | {'yes' if best and min(x.median for x in ratios if x) >= TARGET else 'no'}"
            f" (best {reached:.2f}) |"
        )
    return lines


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 small videos, 2 rounds")
    parser.add_argument("--part", choices=("cost", "peers", "both"), default="both")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 5; 2 with --quick)")
    parser.add_argument("--out", default=os.path.join(HERE, "out", "peers"))
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument(
        "--torchcodec_python", help="a Python with torch, torchvision, torchcodec and av"
    )
    args = parser.parse_args()
    args.rounds = args.rounds or (2 if args.quick else 5)
    return args


def main() -> None:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)  # before TF starts (plan_dataset)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    args = parse_args()
    start = time.perf_counter()
    videos, frames = (2, 80) if args.quick else (6, 250)
    out = os.path.join(args.out, "quick") if args.quick else args.out
    sets = peer_sources.make_sets(out, [(256, 340, 32)], videos, frames, False, log=log)
    data_dirs = peers.build_datasets(sets, out, None, False)
    dataset = peers.plan_dataset(sets[0], data_dirs[sets[0].name])
    lines = []
    if args.part in ("peers", "both"):
        python = peers.torchcodec_python(args.torchcodec_python)
        logs = os.path.join(out, "logs")
        os.makedirs(logs, exist_ok=True)
        workers = {}
        for reader in OURS + MP4:
            worker = peers.Worker(
                reader, python if reader in MP4 else sys.executable, args.cpu,
                os.path.join(logs, f"recipe_{reader}.log"),
            )  # fmt: skip
            if worker.error:
                log(f"{reader}: unavailable: {worker.error}")
                worker.close()
            else:
                workers[reader] = worker
        try:
            lines += peer_part(dataset, workers, args.rounds)
        finally:
            for worker in workers.values():
                worker.close()
        lines.append("")
    if args.part in ("cost", "both"):
        lines += cost_part(dataset.data_dir, dataset.version, args.rounds, args.cpu)
    print("\n".join(lines))
    log(f"done in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
