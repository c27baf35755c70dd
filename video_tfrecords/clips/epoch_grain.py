"""`EpochMapDataset`: a `grain.MapDataset` over a source whose indices keep their epoch.

Grain numbers the elements of every epoch after the first past the length (a shuffle of epoch e
gives e * len + i), but `grain.MapDataset.source` hands its source the index modulo the length.
A `ClipSource` draws epoch e's clips for e * len + i, so this passes the index on whole.
"""

from __future__ import annotations

import grain

__all__ = ["EpochMapDataset"]


class EpochMapDataset(grain.MapDataset):
    """`source[index]` for any index >= 0, `len(source)` long (`ClipSource.grain_dataset`)."""

    def __init__(self, source):
        super().__init__()
        self.source = source

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.slice(index)
        return self.source[index]

    def __str__(self) -> str:
        return f"EpochMapDataset({self.source!r})"
