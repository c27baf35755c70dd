"""Regenerates dummy_data/: tiny H.264 videos and the manifests of all three splits.

Run from the repo root: `python dummy_data/make_dummy_data.py` (needs the
`test` extra, for PyAV). The files are committed; run this only to change them.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import synthetic  # noqa: E402

HERE = pathlib.Path(__file__).parent
CLASSES = ["abseiling", "juggling", "surfing"]
# (file, class, frames, height, width): a few frames each, a few KB each.
VIDEOS = {
    "train": [
        ("videos/train_0.mp4", "abseiling", 8, 48, 64),
        ("videos/train_1.mp4", "juggling", 6, 64, 48),
        ("videos/with space 2.mp4", "surfing", 5, 48, 64),
    ],
    "val": [
        ("videos/val_0.mp4", "juggling", 7, 48, 64),
        ("videos/val_1.mp4", "surfing", 4, 48, 64),
    ],
    "test": [
        ("videos/test_0.mp4", "abseiling", 6, 48, 64),
    ],
}


def main():
    (HERE / "labels.txt").write_text("".join(f"{name}\n" for name in CLASSES))
    seed = 0
    for split, videos in VIDEOS.items():
        lines = [f"# {split} split of the dummy data: {{video path}} {{label}}"]
        for path, label, frames, height, width in videos:
            synthetic.write_video(
                str(HERE / path), synthetic.moving_frames(frames, height, width, seed), fps=25
            )
            lines.append(f"{path} {label}")
            seed += 1
        (HERE / f"{split}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
