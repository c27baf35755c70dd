"""Builds a video_tfrecords dataset on Apache Spark (`pip install ".[spark]"`).

    python -m video_tfrecords.spark_build --manual_dir DIR --data_dir DIR --config NAME [--master URL]
    spark-submit --master yarn "$(python -c 'import video_tfrecords.spark_build as m; print(m.__file__)')" \\
        --manual_dir DIR --data_dir DIR

or, in a notebook or any program that has a SparkSession (Databricks: `spark`):

    from video_tfrecords.spark_build import build
    build(spark, manual_dir="/dbfs/kinetics", data_dir="/dbfs/tensorflow_datasets", config="default")

Spark tasks run the local build's `encoding.encode`, a group of videos of even
total size each, then write one shard each; the driver plans, collects the skip
records and writes the dataset info (`engines/grouped.py`, which any engine can
drive; Spark's map and session are `engines/spark.py`). The result is the folder
`tfds build` makes: `tfds.load`, `tfds.data_source`,
`ClipSource` and `clip_dataset` read it as they read a local build. The manual and
data dirs must be readable (the data dir writable) by every executor at the same
path: a shared file system, or any URL `etils.epath` opens (gs://, s3://, hdfs://).
The master is `--master`, else under spark-submit its own (`--master`,
`spark.master`), else `local[*]`; a local master gets 4 attempts a task
(`local[N]` becomes `local[N,4]`: Spark never retries on `local[N]`). A killed job
rerun with the same command reads back the videos it had encoded from the cache
in the data dir. A failed task is retried as `spark.task.maxFailures` allows;
`spark.speculation` must stay off (as by default): two attempts of one video at
once would write the same cache entry, and the build refuses it.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import time

import tensorflow_datasets as tfds

from video_tfrecords import config as config_lib
from video_tfrecords.engines import grouped
from video_tfrecords.engines import spark as spark_engine
from video_tfrecords.engines.spark import session
from video_tfrecords.ingest import provenance
from video_tfrecords.video_tfrecords_dataset_builder import Builder

__all__ = ["build", "main", "session"]

log = logging.getLogger(__name__)
CONFIGS = {c.name: c for c in Builder.BUILDER_CONFIGS}


def build(
    spark,
    manual_dir: str,
    data_dir: str,
    config: str | config_lib.VideoConfig = "default",
    *,
    file_format: str | None = None,
    download_config: tfds.download.DownloadConfig | None = None,
    overwrite: bool = False,
) -> str:
    """Builds the dataset of `manual_dir` into `data_dir` with the `spark` session's cluster;
    returns the dataset folder (`data_dir/video_tfrecords/CONFIG/VERSION`).

    `config`: a config name (`default`, `native`), its JSON, or a `VideoConfig`.
    `file_format`: "tfrecord" (the default) or "array_record". `download_config`: TFDS's,
    for its shard sizes (`min_shard_size`, `max_shard_size`, `num_shards`). A dataset already
    in `data_dir` is kept if built from the same inputs, else refused before anything is
    decoded (`provenance.StaleDatasetError`, naming each change); `overwrite` rebuilds it,
    encoding only the new and changed videos (those its kept encoding cache lacks).
    """
    if spark.conf.get("spark.speculation", "false").lower() == "true":
        raise ValueError(
            "spark.speculation is on: two attempts of one task would encode the same videos "
            "into the same cache entries at once. Build with spark.speculation=false."
        )
    data_dir = provenance.absolute(data_dir)  # the builder's folders, as every executor sees them
    builder = Builder(config=video_config(config), data_dir=data_dir, file_format=file_format)
    context = spark.sparkContext
    folder = grouped.build(
        builder,
        manual_dir,
        data_dir,
        functools.partial(spark_engine.spark_map, context),
        cores=context.defaultParallelism,
        download_config=download_config,
        overwrite=overwrite,
    )
    return os.fspath(folder)


def video_config(config: str | config_lib.VideoConfig) -> config_lib.VideoConfig:
    """A config by name, or from its JSON (as `tfds build --config` takes it)."""
    if isinstance(config, config_lib.VideoConfig):
        return config
    if config.lstrip().startswith("{"):
        return config_lib.VideoConfig(**json.loads(config))
    if config not in CONFIGS:
        raise ValueError(
            f"no config {config!r}: one of {', '.join(CONFIGS)}, or a JSON VideoConfig"
        )
    return CONFIGS[config]


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        prog="python -m video_tfrecords.spark_build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--manual_dir", required=True, help="the folder of the manifests")
    parser.add_argument(
        "--data_dir",
        default=None,
        help="TFDS data dir (default: TFDS_DATA_DIR or ~/tensorflow_datasets)",
    )
    parser.add_argument("--config", default="default", help="a config name or a JSON VideoConfig")
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default: spark-submit's master, else local[*]; a local master "
        f"gets {spark_engine.LOCAL_ATTEMPTS} attempts a task)",
    )
    parser.add_argument("--file_format", default=None, choices=["tfrecord", "array_record"])
    parser.add_argument(
        "--overwrite", action="store_true", help="rebuild a dataset built from other inputs"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    data_dir = args.data_dir or tfds.core.constants.get_default_data_dir()
    config = video_config(args.config)  # a bad config stops before Spark starts
    start = time.perf_counter()
    spark = session(args.master)
    log.info(
        "Spark started in %.1f s on %s (%d cores)",
        time.perf_counter() - start,
        spark.sparkContext.master,
        spark.sparkContext.defaultParallelism,
    )
    start = time.perf_counter()
    try:
        folder = build(
            spark, args.manual_dir, data_dir, config, file_format=args.file_format,
            overwrite=args.overwrite,
        )  # fmt: skip
    except provenance.StaleDatasetError as e:
        raise SystemExit(str(e)) from None
    log.info("Built %s in %.1f s", folder, time.perf_counter() - start)
    return folder


_MOVED = {"spark_map", "with_retries", "LOCAL_ATTEMPTS"}  # now in engines/spark.py; kept a release


def __getattr__(name):
    """The names that moved to `video_tfrecords.engines.spark`, with a warning, for a release."""
    if name in _MOVED:
        import warnings

        from video_tfrecords.engines import spark

        warnings.warn(
            f"video_tfrecords.spark_build.{name} moved to video_tfrecords.engines.spark.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(spark, name)
    raise AttributeError(f"module 'video_tfrecords.spark_build' has no attribute {name!r}")


if __name__ == "__main__":
    main()
