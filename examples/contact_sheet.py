"""Saves the clips of a few examples as a contact-sheet PNG, to look at the data.

    python examples/contact_sheet.py --split=train --num_examples=3 --num_frames=8 --out=clips.png

One row per example (its filename and label written on the first frame), one
column per frame of the sampled clip.
"""

import argparse
import os

import cv2
import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up lines

import tensorflow_datasets as tfds

import video_tfrecords


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="video_tfrecords/default")
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--split", default="train")
    parser.add_argument("--num_examples", type=int, default=3)
    parser.add_argument("--num_frames", type=int, default=8)
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--height", type=int, default=96, help="row height in pixels")
    parser.add_argument("--out", default="clips.png")
    return parser.parse_args()


def sheet_row(clip: np.ndarray, height: int, caption: str) -> np.ndarray:
    """The frames of one clip side by side, resized to `height`, captioned."""
    width = round(clip.shape[2] * height / clip.shape[1])
    frames = [cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA) for frame in clip]
    row = np.concatenate(frames, axis=1)
    cv2.putText(row, caption, (3, 12), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (255, 255, 255), 1)
    return row


def main():
    args = parse_args()
    decoder = video_tfrecords.ClipDecoder(
        args.num_frames, stride=args.stride, mode="center", short_video="repeat_last"
    )
    dataset, info = tfds.load(
        args.dataset,
        split=args.split,
        data_dir=args.data_dir,
        decoders={"video": decoder},
        with_info=True,
    )
    names = info.features["label"].names
    rows = [
        sheet_row(e["video"], args.height, f"{e['filename'].decode()} | {names[e['label']]}")
        for e in tfds.as_numpy(dataset.take(args.num_examples))
    ]
    width = max(row.shape[1] for row in rows)
    sheet = np.concatenate([np.pad(r, ((0, 2), (0, width - r.shape[1]), (0, 0))) for r in rows])
    cv2.imwrite(args.out, cv2.cvtColor(sheet, cv2.COLOR_RGB2BGR))
    print(
        f"wrote {args.out}: {len(rows)} clips of {args.num_frames} frames, {sheet.shape[1]}x{sheet.shape[0]} px"
    )


if __name__ == "__main__":
    main()
