"""Trains a tiny 3D-conv video classifier in PyTorch, reading clips with ClipSource (no TensorFlow).

    tfds build video_tfrecords --manual_dir=dummy_data --config=default   # once, with the tf extra
    python examples/train_torch.py                   # on that build, under a minute on a CPU
    python examples/train_torch.py --data_dir=/data/tfds --num_frames=16 --crop=112 --epochs=10

The dataset must have been built (ClipSource reads it; building needs TensorFlow).
"""

import argparse
import time

import torch
from torch import nn

from video_tfrecords import ClipSource


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
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def tiny_video_classifier(num_classes: int) -> nn.Module:
    """Two 3D convolutions and a linear classifier: enough to show the input works."""
    return nn.Sequential(
        nn.Conv3d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool3d((1, 2, 2)),
        nn.Conv3d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool3d(1),
        nn.Flatten(),
        nn.Linear(16, num_classes),
    )


def to_model_input(video: torch.Tensor) -> torch.Tensor:
    """uint8 [B, T, H, W, 3] clips -> float [B, 3, T, H, W] in [0, 1], PyTorch's 3D-conv layout."""
    return video.permute(0, 4, 1, 2, 3).float() / 255.0


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    source = ClipSource(
        "train",
        data_dir=args.data_dir,
        config=args.config,
        num_frames=args.num_frames,
        crop_size=(args.crop, args.crop),
        flip=True,
        seed=args.seed,  # clips differ from epoch to epoch, yet a rerun replays them
    )
    # The sampler's indices carry the epoch (e * len + i), so workers that live across
    # epochs (persistent_workers) read each epoch's clips; its seed replays the order.
    sampler = source.sampler(shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(
        source,
        batch_size=args.batch_size,
        sampler=sampler,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
    )
    model = tiny_video_classifier(len(source.label_names))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # new clips and a new order every epoch
        start, total, clips = time.perf_counter(), 0.0, 0
        for batch in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(to_model_input(batch["video"])), batch["label"])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch["label"])
            clips += len(batch["label"])
        print(
            f"epoch {epoch}: {clips} clips, loss {total / clips:.4f}, "
            f"{time.perf_counter() - start:.1f} s"
        )
    print(f"trained on {args.epochs} epoch(s): loss {total / clips:.4f}")


if __name__ == "__main__":
    main()
