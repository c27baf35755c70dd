"""The videos of a distributed build, spread into groups of even total size.

An engine (Spark, or any other) runs one group per task, so a group's size is
how long its task takes. Videos go largest first, each to the group holding the
fewest bytes so far (longest-processing-time first): the groups end within one
video of each other, and as an engine starts tasks in group order, the longest
videos start first. Sizes are those `built_from` found
(`provenance.collect`, one stat a video, remote ones too); videos of size 0
(missing) go round-robin.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import TypeVar

Item = TypeVar("Item")

# At most this many videos per group: a task retried after a crash redoes little,
# and the engine can still even out the groups' real costs.
MAX_GROUP = 64
# At least this many groups per core, for the same reason.
GROUPS_PER_CORE = 16


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
