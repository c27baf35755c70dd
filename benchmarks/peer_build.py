"""Builds the peer table's datasets in one process (one TensorFlow import for all of them).

    python benchmarks/peer_build.py CONFIG MANUAL_DIR:DATA_DIR...

Uses whichever `video_tfrecords` is first on PYTHONPATH (peers.py --build_tree
points it at another checkout when the current build path is broken).
"""

from __future__ import annotations

import sys


def build(config: str, manual_dir: str, data_dir: str) -> None:
    """`download_and_prepare` of one config of the builder, from the videos of `manual_dir`."""
    import tensorflow_datasets as tfds

    import video_tfrecords  # noqa: F401 - registers the builder

    builder = tfds.builder(f"video_tfrecords/{config}", data_dir=data_dir)
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
    )


def main() -> None:
    """Builds each MANUAL_DIR:DATA_DIR pair of the command line, in order."""
    import tensorflow_datasets as tfds

    tfds.disable_progress_bar()
    config, *pairs = sys.argv[1:]
    for pair in pairs:
        manual_dir, data_dir = pair.split(":")
        build(config, manual_dir, data_dir)


if __name__ == "__main__":
    main()
