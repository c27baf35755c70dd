"""The stored format, without TensorFlow: its schema, a prepared dataset's files, its shards,
its Examples.

schema (feature names, features, versions, what a clip reads), dataset_files (the dataset's
folder and what TFDS wrote of it), split_reader (a split's records by index), tfrecord_shard
(one TFRecord file: read, and written without TF), array_record_shard (one array_record
file), checksums (record and frame CRC32C), example_parser (the tf.train.Example wire
format), examples (a split's records interpreted for a clip reader).
"""
