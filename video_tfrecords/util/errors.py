"""The package's error for stored data a reader refuses, defined at the bottom so that every layer
(the clip decoders, the record readers) raises the same class."""

from __future__ import annotations

__all__ = ["CorruptRecordError"]


class CorruptRecordError(ValueError):
    """Stored data that is damaged or hostile: a record whose bytes fail their checksum or do not
    parse as a tf.train.Example, or that holds what the build never writes (a frame of another
    size or encoding, a label past the classes, times that are not times). Its message names
    the file, the record, the video and, for a frame, the frame."""
