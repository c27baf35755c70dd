"""TFDS's own catalog test of the builder, on the committed dummy_data/."""

import pathlib
import shutil

import tensorflow_datasets as tfds

import video_tfrecords

DUMMY_DATA = pathlib.Path(__file__).parent.parent / "dummy_data"


class VideoTfrecordsTest(tfds.testing.DatasetBuilderTestCase):
    DATASET_CLASS = video_tfrecords.Builder
    EXAMPLE_DIR = str(DUMMY_DATA)
    SPLITS = {"train": 3, "validation": 2, "test": 1}
    BUILDER_CONFIG_NAMES_TO_TEST = ["default", "native"]
    SKIP_CHECKSUMS = True

    @classmethod
    def tearDownClass(cls):
        """Removes the encoding cache the builds keep (for a rebuild): TFDS's test gives them
        the example dir as their download dir, so it went into dummy_data/."""
        shutil.rmtree(DUMMY_DATA / "video_tfrecords_cache", ignore_errors=True)
        super().tearDownClass()


if __name__ == "__main__":
    tfds.testing.test_main()
