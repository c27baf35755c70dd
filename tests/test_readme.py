"""The README's reading examples and recipe rows, run as a user runs them, on a dataset whose
videos have different frame sizes (what real corpora hold)."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import tensorflow_datasets as tfds

import synthetic
import video_tfrecords  # noqa: F401  (registers the builder)

REPO = pathlib.Path(__file__).resolve().parent.parent
# Source sizes (h, w): stored by `default` (short side down to 256) as 256x455, 240x320
# (smaller: kept), 256x256 and 256x452.
SIZES = {"train": [(360, 640), (240, 320), (300, 300), (272, 480)], "test": [(240, 320), (360, 640)]}


@pytest.fixture(scope="module")
def mixed_data_dir(tmp_path_factory):
    """A `default` build of videos of four frame sizes; its data dir."""
    root = tmp_path_factory.mktemp("mixed")
    manual = root / "manual"
    for split, sizes in SIZES.items():
        lines = []
        for i, (height, width) in enumerate(sizes):
            path = manual / f"{split}_{i}.mp4"
            synthetic.write_video(str(path), synthetic.moving_frames(24, height, width, seed=i))
            lines.append(f"{path.name} class{i % 2}\n")
        (manual / f"{split}.txt").write_text("".join(lines))
    builder = tfds.builder("video_tfrecords", data_dir=str(root / "data"), config="default")
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual))
    stored = {tuple(e["video"].shape[1:3]) for e in tfds.as_numpy(builder.as_dataset("train"))}
    assert len(stored) == 4, stored  # the frame sizes do vary
    return root / "data"


RUNNER = textwrap.dedent(
    """
    import re, sys
    import tensorflow as tf
    from video_tfrecords import ClipSource, clip_dataset

    readme = open(sys.argv[1], encoding="utf-8").read()
    ran = []
    for block in re.findall(r"```python\\n(.*?)```", readme, re.S):
        if not any(call in block for call in ("tfds.load(", "ClipSource(", "clip_dataset(")):
            continue
        if "audio=True" in block:  # needs a build with audio: tests/test_audio.py runs it
            continue
        names = {}
        exec(block, names)
        for name, value in names.items():
            if isinstance(value, tf.data.Dataset):  # a training dataset repeats: a few batches
                for _ in value.take(4):
                    pass
                ran.append(name)
            elif isinstance(value, ClipSource):
                for example in value:
                    assert example["video"].dtype == "uint8"
                ran.append(name)
    print("ran", sorted(ran))

    # Each recipe row of the table, train and test, through ClipSource and clip_dataset.
    table = readme.split("| recipe | train | test |")[1].split("\\n\\n")[0]
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and "`" in line]
    for recipe, train, test in rows:
        train_args = eval(f"dict({train.strip('` ').replace('T=', 'num_frames=')})")
        test_args = eval(f"dict({test.strip('` |')})")
        kept = {k: train_args[k] for k in ("num_frames", "stride", "fps") if k in train_args}
        for training, args in ((True, train_args), (False, {**kept, **test_args})):
            source = ClipSource("train", seed=0, **args)
            shapes = {source[i]["video"].shape for i in range(len(source))}
            assert len(shapes) == 1, (recipe, args, shapes)
            batch, labels = next(iter(clip_dataset("train", batch_size=2, training=training, **args)))
            assert tuple(batch.shape[1:]) == shapes.pop(), (recipe, args)
    print("recipes", len(rows))
    """
)


def test_the_readme_reading_examples_and_recipes_run_on_mixed_frame_sizes(mixed_data_dir, tmp_path):
    env = {**os.environ, "TFDS_DATA_DIR": str(mixed_data_dir), "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, str(REPO / "README.md")],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path, check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "ran ['ds', 'source', 'test', 'train']" in result.stdout, result.stdout
    assert "recipes 5" in result.stdout


def test_clip_dataset_without_a_crop_on_mixed_frame_sizes_says_to_pass_one(mixed_data_dir):
    from video_tfrecords import clip_dataset

    with pytest.raises(ValueError, match=r"vary in size .* pass crop_size=\(h, w\)"):
        clip_dataset("test", num_frames=4, batch_size=2, training=False, data_dir=str(mixed_data_dir))
