"""A Grain input loop over ClipSource: shuffled, batched clips from worker processes, no TensorFlow.

    tfds build video_tfrecords --manual_dir=dummy_data --config=default   # once, with the tf extra
    python examples/grain_loop.py
    python examples/grain_loop.py --data_dir=/data/tfds --num_frames=16 --crop=112 --workers=8

Each batch is a dict of NumPy arrays, ready for `jax.device_put` or any framework.
"""

import argparse

import grain
import numpy as np

from video_tfrecords import ClipSource, fold_in


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data_dir", default=None, help="TFDS data dir (default ~/tensorflow_datasets)"
    )
    parser.add_argument("--config", default="default")
    parser.add_argument("--num_frames", type=int, default=4)
    parser.add_argument("--crop", type=int, default=32, help="square crop side, in pixels")
    parser.add_argument("--batch_size", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="Grain worker processes")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def to_float(example: dict) -> dict:
    """Keeps the clip (as float32 in [0, 1]) and the label."""
    return {"video": example["video"].astype(np.float32) / 255.0, "label": example["label"]}


def epoch_batches(source: ClipSource, epoch: int, args) -> grain.IterDataset:
    """One epoch: the examples shuffled, each video's clip of that epoch, in batches."""
    source.set_epoch(epoch)  # before the workers copy the source
    dataset = (
        grain.MapDataset.source(source)
        .shuffle(seed=fold_in(args.seed, epoch) % 2**32)  # Grain takes 32-bit seeds
        .map(to_float)
        .batch(args.batch_size)
        .to_iter_dataset()
    )
    if args.workers > 0:
        dataset = dataset.mp_prefetch(grain.MultiprocessingOptions(num_workers=args.workers))
    return dataset


def main():
    args = parse_args()
    source = ClipSource(
        "train",
        data_dir=args.data_dir,
        config=args.config,
        num_frames=args.num_frames,
        crop_size=(args.crop, args.crop),
        flip=True,
        seed=args.seed,
    )
    for epoch in range(args.epochs):
        clips, brightness = 0, []
        batches = iter(epoch_batches(source, epoch, args))
        for batch in batches:
            clips += len(batch["label"])
            brightness.append(float(batch["video"].mean()))
            shape = batch["video"].shape[1:]
        del batch  # its arrays live in shared memory, freed with them
        batches.close()  # stops the workers
        print(
            f"epoch {epoch}: {clips} clips of shape {shape}, mean pixel {np.mean(brightness):.4f}"
        )
    print(f"read {args.epochs} epoch(s) of {len(source)} clips")


if __name__ == "__main__":
    main()
