"""ClipSource in a PyTorch DataLoader, with glibc's heap as it comes and with its thresholds fixed.

    python benchmarks/loader_allocator.py           # ~3 min on 2 cores, data included
    python benchmarks/loader_allocator.py --quick   # < 1 min

glibc hands large freed blocks back to the kernel (its mmap and trim
thresholds, which it adjusts as a process runs). When it does, the next clip's
output array, or the next batch, is page-faulted afresh: a 16-frame 340x256
clip is 4.2 MB, about 1020 pages. `clip_source_speed.py` reads one clip at a
time; a training loop holds a batch of clips, stacks them into a tensor and
drops both, which gives the allocator another pattern.

Each round runs two fresh child processes one after the other, pinned to the
same core: one with the environment as it is, one with
`GLIBC_TUNABLES=glibc.malloc.trim_threshold=...:glibc.malloc.mmap_threshold=...`
(glibc reads it at start-up, so it cannot be switched inside a process). A
child reads the split through `DataLoader(source, batch_size, shuffle=True,
num_workers=0)` (its default collate stacks the clips) for 1 + `--epochs`
epochs: the first epoch's reads are first reads, the others re-reads. It
reports its CPU time and minor page faults per clip for each. Prints one
markdown table: clips/s of CPU time (median of the rounds), faults per clip,
and the speed with the tunables over the speed without, round by round
(median [min-max]). The data are those of `clip_source_speed.py` (built in a
child process with TensorFlow; the readers import none).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

import clip_source_speed as speed  # its data and its TensorFlow child

TUNABLES = "glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432"
SEED = 2024


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and epochs")
    parser.add_argument("--rounds", type=int, default=None, help="default 7 (--quick: 2)")
    parser.add_argument("--epochs", type=int, default=None, help="re-read epochs, default 4")
    parser.add_argument("--clips", type=int, nargs="+", default=[16, 64], help="clip lengths")
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--work_dir", default=None, help="keeps the data here between runs")
    parser.add_argument("--cpu", type=int, default=None, help="the core to run on (default: last)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # JSON: one child's job
    return parser.parse_args()


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def child(job: dict) -> None:
    """Reads the split through a DataLoader; prints {"first": [s, faults], "re": [...]} per clip."""
    import torch.utils.data

    from video_tfrecords import ClipSource

    speed.pin_to_one_core(job["cpu"])
    source = ClipSource(
        "train", data_dir=job["data_dir"], num_frames=job["num_frames"], stride=2, seed=SEED
    )
    loader = torch.utils.data.DataLoader(
        source, batch_size=job["batch_size"], shuffle=True, num_workers=0
    )
    results = {}
    for name, epochs in (("first", 1), ("re", job["epochs"])):
        faults, start = minor_faults(), time.process_time()
        for epoch in range(epochs):
            source.set_epoch(epoch)
            for batch in loader:
                del batch
        clips = epochs * len(source)
        results[name] = [
            (time.process_time() - start) / clips,
            (minor_faults() - faults) / clips,
        ]
    print(json.dumps(results))


def run_child(job: dict, tunables: bool) -> dict:
    env = dict(os.environ)
    if tunables:
        env["GLIBC_TUNABLES"] = TUNABLES
    else:
        env.pop("GLIBC_TUNABLES", None)
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(job)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    args = parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    rounds = args.rounds or (2 if args.quick else 7)
    epochs = args.epochs or (1 if args.quick else 4)
    videos = 4 if args.quick else 12
    cpu = speed.pin_to_one_core(args.cpu)
    work = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix="loader_allocator_"))
    speed.log(f"core {cpu}; {videos} videos; data in {work}")
    manual_dir = speed.make_manual_dir(work / f"manual{videos}", videos)
    builder = speed.TfChild(cpu)
    try:
        data_dir = os.fspath(
            builder.build(str(manual_dir), str(work / f"data{videos}_tfrecord"), "tfrecord")
        )
    finally:
        builder.close()
    print(
        f"\nClipSource through DataLoader(batch_size={args.batch_size}, num_workers=0), one "
        f"core (CPU {cpu}); {videos} videos of 250 frames at 340x256, stride 2; {rounds} "
        f"rounds of fresh processes, 1 epoch of first reads then {epochs} of re-reads; CPU "
        "time. Ratio: speed with the tunables over without, per round, median [min-max].\n"
    )
    print("| clip | reads | glibc | clips/s | minor faults/clip | tunables / default |")
    print("| --- | --- | --- | --- | --- | --- |")
    for num_frames in args.clips:
        job = {
            "data_dir": data_dir,
            "num_frames": num_frames,
            "batch_size": args.batch_size,
            "epochs": epochs,
            "cpu": cpu,
        }
        runs = {False: [], True: []}
        for r in range(rounds):
            for tunables in (False, True) if r % 2 == 0 else (True, False):
                runs[tunables].append(run_child(job, tunables))
        for reads in ("first", "re"):
            seconds = {t: np.array([run[reads][0] for run in runs[t]]) for t in runs}
            faults = {t: np.mean([run[reads][1] for run in runs[t]]) for t in runs}
            ratios = seconds[False] / seconds[True]
            for tunables, label in ((False, "as it comes"), (True, "GLIBC_TUNABLES")):
                ratio = ""
                if tunables:
                    ratio = f"{np.median(ratios):.3f} [{ratios.min():.3f}-{ratios.max():.3f}]"
                rate = 1 / np.median(seconds[tunables])
                print(
                    f"| {num_frames} | {reads}-reads | {label} | {rate:.1f} | "
                    f"{faults[tunables]:.0f} | {ratio} |"
                )


if __name__ == "__main__":
    main()
