"""Reading a prepared dataset without TensorFlow: its files, its shards, its Examples.

dataset_files (the dataset's folder and what TFDS wrote of it), shard_reader
(a split's records by index), tfrecord_shard and array_record_shard (one
shard file each), checksums (record and frame CRC32C), example_parser (the
tf.train.Example wire format), buffers (reused output arrays), fork_safe
(locks a forked worker gets unheld).
"""
