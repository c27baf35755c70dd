"""Trains a tiny 3D-conv video classifier for one epoch through `clip_dataset`.

    python examples/train_keras.py                      # on dummy_data/, under a minute on a CPU
    python examples/train_keras.py --manual_dir=/data/kinetics --num_frames=16 --crop=112 --epochs=10

Builds the dataset first if it is not there yet.
"""

import argparse
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up lines

import keras
import tensorflow_datasets as tfds

import video_tfrecords

REPO = pathlib.Path(__file__).resolve().parent.parent


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manual_dir", default=str(REPO / "dummy_data"))
    parser.add_argument(
        "--data_dir", default=None, help="TFDS data dir (default ~/tensorflow_datasets)"
    )
    parser.add_argument("--config", default="default")
    parser.add_argument("--num_frames", type=int, default=4)
    parser.add_argument("--crop", type=int, default=32, help="square crop side, in pixels")
    parser.add_argument("--batch_size", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def tiny_video_classifier(num_frames: int, crop: int, num_classes: int) -> keras.Model:
    """Two 3D convolutions and a linear classifier: enough to show the input works."""
    return keras.Sequential(
        [
            keras.Input((num_frames, crop, crop, 3)),
            keras.layers.Conv3D(8, 3, padding="same", activation="relu"),
            keras.layers.MaxPool3D((1, 2, 2)),
            keras.layers.Conv3D(16, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling3D(),
            keras.layers.Dense(num_classes),
        ]
    )


def main():
    args = parse_args()
    builder = tfds.builder("video_tfrecords", config=args.config, data_dir=args.data_dir)
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=args.manual_dir)
    )
    train = video_tfrecords.clip_dataset(
        "train",
        num_frames=args.num_frames,
        batch_size=args.batch_size,
        crop_size=(args.crop, args.crop),
        flip=True,
        seed=args.seed,  # clips differ from epoch to epoch, yet a rerun replays them
        data_dir=args.data_dir,
        builder_kwargs={"config": args.config},
    )
    steps_per_epoch = max(1, builder.info.splits["train"].num_examples // args.batch_size)
    num_classes = builder.info.features["label"].num_classes
    model = tiny_video_classifier(args.num_frames, args.crop, num_classes)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    # clip_dataset repeats forever (a new clip per video each epoch): say how long an epoch is.
    history = model.fit(train, epochs=args.epochs, steps_per_epoch=steps_per_epoch, verbose=2)
    print(f"trained on {args.epochs} epoch(s): loss {history.history['loss'][-1]:.4f}")


if __name__ == "__main__":
    main()
