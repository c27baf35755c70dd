"""Writes a split of examples that arrive serialized, with TFDS's own shard writer.

`generate` serializes each example where its video is encoded (see
`serialize`), so the build skips TFDS's encode-and-serialize step: TFDS's
`Writer` still shuffles, shards, names the files in any file format and
counts what it wrote, exactly as for a split of example dicts. `Writer` is
TFDS-internal API; its signature is the same in TFDS 4.9.9 and 4.9.10, and
the catalog test would catch a change.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer
from tensorflow_datasets.core import writer as writer_lib


class AsSerialized(example_serializer.Serializer):
    """A serializer for examples that already are serialized tf.train.Example bytes."""

    def serialize_example(self, example: bytes) -> bytes:
        if not isinstance(example, bytes):
            raise TypeError(
                f"expected a serialized tf.train.Example, got a {type(example).__name__}"
            )
        return example


def write_split(
    builder: tfds.core.GeneratorBasedBuilder,
    split: str,
    examples: Iterable[tuple[str, bytes]],
    download_config: tfds.download.DownloadConfig,
) -> tfds.core.SplitInfo:
    """Writes `examples` as the shards of `split`, as TFDS writes a generator's examples."""
    template = builder._get_filename_template(split_name=split)
    # As TFDS does: an unshuffled split is written in the order of integer keys.
    keep_order = builder.info.disable_shuffling or download_config.nondeterministic_order
    writer = writer_lib.Writer(
        serializer=AsSerialized(builder.info.features.get_serialized_info()),
        filename_template=template,
        hash_salt=split,
        disable_shuffling=keep_order,
        example_writer=builder._example_writer(),
        shard_config=download_config.get_shard_config(),
        ignore_duplicates=download_config.ignore_duplicates,
    )
    if download_config.max_examples_per_split is not None:
        examples = itertools.islice(examples, download_config.max_examples_per_split)
    for index, (key, example) in enumerate(examples):
        writer.write(index if keep_order else key, example)
    shard_lengths, num_bytes = writer.finalize()
    return tfds.core.SplitInfo(
        name=split, shard_lengths=shard_lengths, num_bytes=num_bytes, filename_template=template
    )
