"""What importing the package loads, in fresh interpreters: a TF-free reader pays for neither
TensorFlow, PyAV nor the builder; a TFDS user finds the builder registered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = [
    "tensorflow", "tensorflow_datasets", "av", "video_tfrecords.video_tfrecords_dataset_builder"
]


def fresh(code: str) -> dict:
    """Runs `code` in a new interpreter (this checkout first on the path); returns the JSON its
    last line prints."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/", check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def loaded_after(statement: str) -> list[str]:
    return fresh(
        f"import json, sys\n{statement}\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )


@pytest.mark.parametrize(
    "statement",
    [
        "from video_tfrecords import ClipSource",
        "from video_tfrecords.clip_source import ClipSource, EpochSampler",
        "import video_tfrecords; video_tfrecords.ClipSpec; video_tfrecords.fold_in",
    ],
)
def test_a_reader_without_tensorflow_loads_neither_tf_tfds_pyav_nor_the_builder(statement):
    assert loaded_after(statement) == []


def registered_after(statement: str) -> bool:
    return fresh(
        f"import json\n{statement}\n"
        "import tensorflow_datasets as tfds\n"
        "try:\n    tfds.builder_cls('video_tfrecords'); found = True\n"
        "except tfds.core.DatasetNotFoundError:\n    found = False\n"
        "print(json.dumps(found))"
    )


@pytest.mark.parametrize(
    "statement",
    [
        "import tensorflow_datasets as tfds, video_tfrecords",  # the README's
        "from video_tfrecords import ClipDecoder",
        "import video_tfrecords; video_tfrecords.Builder",
    ],
)
def test_a_tfds_user_finds_the_builder_registered(statement):
    assert registered_after(statement)


def test_the_package_alone_registers_nothing():
    assert not registered_after("import video_tfrecords")


def test_the_errors_users_catch_are_exported():
    import video_tfrecords
    from video_tfrecords.ingest.encoding import VideoBuildError
    from video_tfrecords.ingest.manifest import ManifestError
    from video_tfrecords.records.checksums import CorruptRecordError

    assert video_tfrecords.CorruptRecordError is CorruptRecordError
    assert video_tfrecords.VideoBuildError is VideoBuildError
    assert video_tfrecords.ManifestError is ManifestError
    assert set(video_tfrecords.__all__) <= set(dir(video_tfrecords))


@pytest.mark.parametrize("name", ["spark_map", "with_retries", "LOCAL_ATTEMPTS"])
def test_spark_builds_old_names_still_work_with_a_deprecation_warning(name):
    from video_tfrecords import spark_build
    from video_tfrecords.engines import spark

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert getattr(spark_build, name) is getattr(spark, name)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "video_tfrecords.engines.spark" in str(caught[0].message)
