"""The reader install: a fresh venv without TensorFlow reads clips, trains in PyTorch, loops in Grain.

Builds the dummy dataset here (with TensorFlow), computes the TF path's clips,
then installs the package into a new venv the way the README says (`pip install .`
from a clone, plus torch and grain) and checks, in that venv, that TensorFlow
cannot be imported, that both examples run, and that ClipSource gives the TF
path's clips, for TFRecord and array_record builds. Takes about 70 s with a
warm pip cache (most of it pip installing into the new venv).
"""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow_datasets as tfds

import video_tfrecords
from video_tfrecords import ClipDecoder

REPO = pathlib.Path(__file__).resolve().parent.parent
CLIP = {"num_frames": 3, "stride": (1, 2), "crop_size": (32, 40), "flip": True, "seed": 77}
FORMATS = ("tfrecord", "array_record")


def run(command, **kwargs):
    """Runs a command; fails the test with its output if it fails.

    Without PYTHONPATH: the new venv must import its installed package, not a checkout's."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env, **kwargs)
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def build_dummy(data_dir: pathlib.Path, file_format: str):
    builder = tfds.builder(
        "video_tfrecords", config="default", data_dir=str(data_dir), file_format=file_format
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(REPO / "dummy_data"))
    )
    return builder


def tf_path_clips(builder) -> dict[str, np.ndarray]:
    """filename -> the clip tfds + ClipDecoder(seed) gives (TensorFlow's reading and decoding)."""
    args = dict(CLIP)
    decoders = {"video": ClipDecoder(args.pop("num_frames"), **args)}
    dataset = builder.as_dataset(split="train", decoders=decoders)
    return {e["filename"].decode(): e["video"] for e in tfds.as_numpy(dataset)}


def clone(tmp_path: pathlib.Path) -> pathlib.Path:
    """The files a clone has that `pip install .` needs (the working tree, uncommitted changes too)."""
    target = tmp_path / "clone"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "video_tfrecords", target / "video_tfrecords", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, target / name)
    return target


CHECK = textwrap.dedent(
    """
    import sys
    import numpy as np
    import video_tfrecords
    from video_tfrecords import ClipSource

    assert "site-packages" in video_tfrecords.__file__, video_tfrecords.__file__
    data_dir, reference = sys.argv[1], np.load(sys.argv[2])
    source = ClipSource("train", data_dir=data_dir, **{clip})
    names = [source[i]["filename"] for i in range(len(source))]
    assert sorted(names) == sorted(reference.files), (names, reference.files)
    for i, name in enumerate(names):
        np.testing.assert_array_equal(source[i]["video"], reference[name])
    assert "tensorflow" not in sys.modules
    print("same clips:", len(names))
    """
).format(clip=repr(CLIP))


def test_reader_install_has_no_tensorflow_and_reads_the_tf_paths_clips(tmp_path):
    builders = {fmt: build_dummy(tmp_path / fmt, fmt) for fmt in FORMATS}
    reference = tf_path_clips(builders["tfrecord"])  # tf.data cannot read array_record
    np.savez(tmp_path / "reference.npz", **reference)

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    run(
        [python, "-m", "pip", "install", "-q", str(clone(tmp_path)), "torch==2.13.0", "grain"],
        timeout=1200,
    )
    outside = {"cwd": str(tmp_path), "timeout": 300}  # not the repo: the installed package
    missing = subprocess.run(
        [python, "-c", "import tensorflow"], capture_output=True, text=True, check=False, **outside
    )
    assert missing.returncode != 0 and "No module named 'tensorflow'" in missing.stderr
    check = tmp_path / "check.py"
    check.write_text(CHECK)
    for fmt in FORMATS:
        data_dir = str(tmp_path / fmt)
        out = run([python, str(check), data_dir, str(tmp_path / "reference.npz")], **outside)
        assert f"same clips: {len(reference)}" in out.stdout
        out = run(
            [python, str(REPO / "examples" / "train_torch.py"), f"--data_dir={data_dir}"], **outside
        )
        assert "trained on 2 epoch(s): loss" in out.stdout
        out = run(
            [python, str(REPO / "examples" / "grain_loop.py"), f"--data_dir={data_dir}"], **outside
        )
        assert f"read 2 epoch(s) of {len(reference)} clips" in out.stdout
    assert video_tfrecords.__file__.startswith(str(REPO))  # this process used the repo's code
