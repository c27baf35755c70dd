"""Training and test recipes: their cost over a plain clip, and against mp4 readers + torchvision.

On peers.py's 340x256 GOP 32 sources. `--part cost`, one pinned process: each recipe's clip against
a plain clip of the same frames (TF graph and NumPy) and its floor with whole-frame decodes. `--part
peers`: SlowFast and VideoMAE training clips, ours against PyAV and TorchCodec + torchvision v2.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np

import peer_sources
import peers
import timing
from timing import arguments, cpu_time, interleave, median, ratio, rounds_note, table

SEED = 11
PLAIN = {"num_frames": 16, "stride": 2}
COST_RECIPES = {  # name: (words, the recipe's clip arguments, its plain clip's)
    "jitter": ("16 frames, stride 2, short side 256-320, 224 crop, flip",
               {**PLAIN, "short_side": (256, 320), "crop_size": (224, 224), "flip": True}, PLAIN),
    "resized": ("16 frames, stride 2, random-resized crop 224",
                {**PLAIN, "crop": "resized", "crop_size": (224, 224)}, PLAIN),
    "test views": ("10 clips x 3 crops of 256, 16 frames, stride 2",
                   {**PLAIN, "mode": "uniform", "num_clips": 10, "num_crops": 3,
                    "crop_size": (256, 256), "short_side": 256},
                   {**PLAIN, "mode": "uniform", "num_clips": 10}),
}  # fmt: skip
PEER_RECIPES = {  # name: (words, the clip's arguments, the mp4 readers' torchvision transform)
    "SlowFast train": ("32 frames, stride 2, short side 256-320, 224 crop, flip",
                       {"num_frames": 32, "stride": 2, "short_side": (256, 320), "crop": "random",
                        "crop_size": (224, 224), "flip": True, "mode": "random", "seed": SEED},
                       "jitter_crop_flip"),
    "VideoMAE train": ("16 frames, stride 4, random-resized crop 224",
                       {"num_frames": 16, "stride": 4, "crop": "resized", "crop_size": (224, 224),
                        "mode": "random", "seed": SEED}, "resized_crop"),
}  # fmt: skip
MP4 = ("pyav", "torchcodec")
OURS = ("tf_free", "tf")
TARGET = 2.0


def cost_part(data_dir: str, version: str, rounds: int, cpu: int) -> list[str]:
    """Recipe clip / plain clip, CPU time per clip on one core, TF graph and NumPy path."""
    timing.one_core(cpu, tensorflow=True)  # before TF starts
    import tensorflow as tf
    import tensorflow_datasets as tfds

    from video_tfrecords import ClipDecoder, ClipSource, EncodedFrames

    loaded = tfds.load(f"video_tfrecords/default:{version}", split="train", data_dir=data_dir,
                       download=False, decoders={"video": EncodedFrames()})  # fmt: skip
    videos = [example["video"] for example in loaded]
    signature = [tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.int64)]
    opened = dict(data_dir=data_dir, config="default", version=version)

    def graph(kwargs):
        sample = tf.function(ClipDecoder(**kwargs).sample, input_signature=signature)
        return lambda seed: [  # each clip dropped before the next, as a loader does
            sample(video, tf.constant(seed + i, tf.int64)).shape for i, video in enumerate(videos)
        ]

    def numpy(kwargs):
        source = ClipSource("train", **opened, **kwargs)
        read = lambda i, seed: source.get(i, seed=seed)["video"].shape  # noqa: E731
        return lambda seed: [read(i, seed + i) for i in range(len(source))]

    def per_clip(read):
        """Measures CPU seconds per clip; the n-th measure's clips are drawn with seed 1000n."""
        seeds = itertools.count(1000, 1000)
        return lambda: cpu_time(lambda: read(next(seeds))) / len(videos)

    variants = {}
    source = ClipSource("train", **opened, num_frames=1)
    frame = source[0]["video"][0]  # one decoded 340x256 frame
    for name, (_, recipe, plain) in COST_RECIPES.items():
        for path, make in (("TF graph", graph), ("NumPy", numpy)):
            variants[(name, path, "recipe")] = make(recipe)
            variants[(name, path, "plain")] = make(plain)
        work = unavoidable_work(name, frame)
        variants[(name, "work")] = lambda seed, work=work: [work() for _ in videos]
    for read in variants.values():
        read(0)  # warm-up: tracing, shards mapped
    times = interleave({key: per_clip(read) for key, read in variants.items()}, rounds)
    rows = []
    for name, (label, _, _) in COST_RECIPES.items():
        for path in ("TF graph", "NumPy"):
            spent, plain = times[(name, path, "recipe")], times[(name, path, "plain")]
            r = ratio(spent, plain)
            floor = ratio([p + w for p, w in zip(plain, times[(name, "work")])], plain)
            rows.append([
                f"{name}: {label}", path, f"{median(spent) * 1e3:.2f}",
                f"{median(plain) * 1e3:.2f}", r, "yes" if r.median <= 1.2 else "no", floor,
            ])  # fmt: skip
    header = ["recipe", "path", "recipe clip", "plain clip", "recipe / plain", "<= 1.2", "floor"]
    return [
        f"Recipe clip against a plain clip of the same frames at full size, CPU ms per clip on "
        f"one core ({rounds_note(rounds)}), {len(videos)} records of 340x256:", "",
        *table(header, rows), "",
        "floor: (plain clip + the work a recipe adds to whole-frame decodes) / plain clip, that "
        "work timed alone in the same rounds: 16 bilinear resizes of a 179-224 px box to 224 "
        "(jitter: and a flip) by `resize_box`; test views: 3 crops of each of 160 frames copied "
        "into a reused output (a fresh one's page faults are not counted). The TF graph decodes "
        "only each box's window, so it can go below.",
    ]  # fmt: skip


def unavoidable_work(name: str, frame: np.ndarray):
    """One clip's worth of the work a recipe adds to its plain clip, on a decoded `frame`:
    resizing its boxes (drawn as after a 256-320 short side), or copying the test crops."""
    from video_tfrecords.clips.resize import resize_box

    if name == "test views":
        offsets = [0, (frame.shape[1] - 256 + 1) // 2, frame.shape[1] - 256]
        out = np.empty((10, 3, 16, 256, 256, 3), np.uint8)  # reused: its page faults not counted

        def copy_crops():
            for clip, t in itertools.product(range(10), range(16)):
                for crop, x in enumerate(offsets):
                    resize_box(frame[:, x : x + 256], 256, 256, out[clip, crop, t])

        return copy_crops
    rng, out = np.random.default_rng(SEED), np.empty((16, 224, 224, 3), np.uint8)

    def resize_boxes():
        side = round(224 * 256 / rng.integers(256, 321))
        for target in out:
            resize_box(frame[:side, :side], 224, 224, target, name == "jitter")

    return resize_boxes


def has_torchvision(python: str) -> bool:
    """Whether `python` imports torchvision (the mp4 readers' transforms)."""
    check = subprocess.run([python, "-c", "import torchvision"], capture_output=True, check=False)
    return check.returncode == 0


def peer_part(sources, data_dir: str, python: str, cpu: int, rounds: int, logs: str) -> list[str]:
    """CPU ms per clip of every reader per recipe, and best mp4 reader / ours. The mp4 readers
    run in `python`; without torchvision there, they are shown unavailable."""
    spec_of = {name: lambda _, spec=spec: spec for name, (_, spec, _) in PEER_RECIPES.items()}
    dataset = peers.plan_dataset(sources, data_dir, spec_of)
    pythons = dict.fromkeys(OURS, sys.executable)
    unavailable = {}
    if has_torchvision(python):
        pythons.update(dict.fromkeys(MP4, python))
    else:
        unavailable = dict.fromkeys(MP4, f"no torchvision in {python}")
    rows = []
    with peers.started_workers(pythons, cpu, logs) as (workers, failed):
        unavailable.update(failed)
        for name, (label, _, transform) in PEER_RECIPES.items():
            times = peers.measure(dataset, name, workers, rounds, None, transform=transform).decode
            rows.append([f"{name}: {label}", *recipe_cells(times, unavailable)])
    header = [peers.SHORT[r] + (" + torchvision" if r in MP4 else "") for r in OURS + MP4]
    header += ["best mp4 / ours TF-free", "best mp4 / ours TF", ">= 2"]
    return [f"Training recipes against mp4 readers + torchvision, {sources.name}, CPU ms per clip "
            f"on one core (clips/s); {rounds_note(rounds)} of the best mp4 reader's time to ours:",
            "", *table(["recipe", *header], rows)]  # fmt: skip


def recipe_cells(times: dict, unavailable: dict) -> list[str]:
    """A recipe's cells: every reader's time, best mp4 reader / each of ours, the verdict."""
    cells = [peers.cell(times[r]) if r in times else f"unavailable ({unavailable[r]})"
             for r in OURS + MP4]  # fmt: skip
    ratios = peers.against_best(times)
    cells += [str(ratios.get(r, "n/a")) for r in OURS]
    reached = [x.median for x in ratios.values()]
    if not reached:
        return [*cells, "n/a"]
    return [*cells, f"{'yes' if min(reached) >= TARGET else 'no'} (best {max(reached):.2f})"]


def main() -> None:
    """Makes and builds the sources, runs the parts asked for, prints their tables."""
    parser = arguments(__doc__, "peers", rounds=5, quick_folder=True)
    parser.add_argument("--part", choices=("cost", "peers", "both"), default="both")
    peers.add_torchcodec_python(parser)
    args = parser.parse_args()
    rounds, out = args.rounds, args.out
    videos, frames = (2, 80) if args.quick else (6, 250)
    (sources,) = peer_sources.make_sets(out, [(256, 340, 32)], videos, frames, False)
    data_dir = peers.build_datasets([sources], out)[sources.name]
    lines = []
    if args.part in ("peers", "both"):
        python = args.torchcodec_python
        logs = os.path.join(out, "logs", "recipes")
        lines += [*peer_part(sources, data_dir, python, args.cpu, rounds, logs), ""]
    if args.part in ("cost", "both"):
        lines += cost_part(data_dir, peers.built_version(data_dir), rounds, args.cpu)
    print("\n".join(lines))


if __name__ == "__main__":
    np.seterr(all="ignore")
    timing.main(main)
