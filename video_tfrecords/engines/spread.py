"""The videos of a distributed build, spread into groups of even total size.

An engine (Spark, or any other) runs one group per task, so a group's size is
how long its task takes. Videos go largest first, each to the group holding the
fewest bytes so far (longest-processing-time first): the groups end within one
video of each other, and as an engine starts tasks in group order, the longest
videos start first. Sizes come from one `stat` per local video, in threads;
videos on a remote file system (`scheme://`) count as equal (one remote stat
each would cost more than the balance saves), so they go round-robin in
manifest order.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from video_tfrecords.util.paths import is_remote

Item = TypeVar("Item")

# At most this many videos per group: a task retried after a crash redoes little,
# and the engine can still even out the groups' real costs.
MAX_GROUP = 64
# At least this many groups per core, for the same reason.
GROUPS_PER_CORE = 16
STAT_THREADS = 32
STAT_CHUNK = 2048  # paths a thread stats in one go (a future per path would cost more)


def file_sizes(paths: Sequence[str]) -> list[int]:
    """Each local file's size in bytes: 0 for a missing one (it becomes a skip record)
    and for a remote one (not looked at)."""

    def size(path: str) -> int:
        if is_remote(path):
            return 0
        try:
            return os.stat(path).st_size
        except OSError:
            return 0

    sizes = lambda chunk: [size(p) for p in chunk]
    chunks = [paths[i : i + STAT_CHUNK] for i in range(0, len(paths), STAT_CHUNK)]
    with ThreadPoolExecutor(STAT_THREADS) as pool:  # a network file system answers in parallel
        return [n for chunk in pool.map(sizes, chunks) for n in chunk]


def group_count(num_items: int, cores: int) -> int:
    """How many groups: `GROUPS_PER_CORE` per core, more if a group would pass `MAX_GROUP`,
    never more than the items (one video per group for small builds)."""
    wanted = max(GROUPS_PER_CORE * max(1, cores), math.ceil(num_items / MAX_GROUP))
    return max(1, min(num_items, wanted))


def spread(items: Sequence[Item], sizes: Sequence[int], num_groups: int) -> list[list[Item]]:
    """`items` in `num_groups` groups of even total size, largest item first; each group
    keeps its items largest first. Equal sizes go round-robin in input order."""
    if len(items) != len(sizes):
        raise ValueError(f"{len(items)} items but {len(sizes)} sizes")
    groups: list[list[Item]] = [[] for _ in range(num_groups)]
    loads = [(0, g) for g in range(num_groups)]  # (bytes so far, group), a heap
    for i in sorted(range(len(items)), key=lambda i: -sizes[i]):  # stable: ties in input order
        load, g = heapq.heappop(loads)
        groups[g].append(items[i])
        heapq.heappush(loads, (load + sizes[i] + 1, g))  # +1: equal sizes still spread
    return [group for group in groups if group]
