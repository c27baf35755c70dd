"""Spark as an engine of `engines.grouped`: its parallel map, and the session it runs on.

`spark_map` runs `fn(group, attempt)` as one Spark task per group, told which attempt of the
task it is; `session` starts (or joins) a SparkSession whose local masters retry tasks.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator

__all__ = ["LOCAL_ATTEMPTS", "session", "spark_map", "with_retries"]

LOCAL_ATTEMPTS = 4  # attempts of a task on a local master, Spark's default on a cluster


def spark_map(context, fn: Callable[[list, int], list], groups: list[list]) -> list:
    """`fn(group, attempt)` for every group, one Spark task each; the results, in one list."""
    if not groups:
        return []
    rdd = context.parallelize(groups, len(groups))  # one group per partition
    return rdd.mapPartitions(functools.partial(_run_partition, fn)).collect()


def _run_partition(fn: Callable[[list, int], list], groups: Iterable[list]) -> Iterator:
    """A task: its group's results, told which attempt of the task this is."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    for group in groups:
        yield from fn(group, attempt)


def session(master: str | None = None):
    """A SparkSession: on `master`, else spark-submit's, else `local[*]`; local masters with
    LOCAL_ATTEMPTS attempts a task.

    A session this process starts on a local master runs its Python workers with this
    Python (so a virtualenv need not be active), unless PYSPARK_PYTHON says otherwise.
    """
    from pyspark.sql import SparkSession

    launching = "PYSPARK_GATEWAY_PORT" not in os.environ  # not under spark-submit
    if launching and master is None:
        master = "local[*]"
    if launching and master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        master = with_retries(master)
    builder = SparkSession.builder.appName("video_tfrecords build")
    if master:
        builder = builder.master(master)
    return builder.getOrCreate()


def with_retries(master: str) -> str:
    """`local[N]` as `local[N,4]`: Spark never retries a task on `local[N]`, and a video that
    kills its task must be retried (then skipped), as on a cluster (4 attempts by default)."""
    bare = re.fullmatch(r"local\[(\d+|\*)\]", master)
    return f"local[{bare.group(1)},{LOCAL_ATTEMPTS}]" if bare else master
