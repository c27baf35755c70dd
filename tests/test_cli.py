"""The real `tfds build` command on dummy_data/, then `tfds.load` of what it wrote."""

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import tensorflow_datasets as tfds

import synthetic
from conftest import opencv_frames, psnr
from video_tfrecords.records.schema import DATASET_VERSION

REPO = pathlib.Path(__file__).parent.parent
TFDS = str(pathlib.Path(sys.executable).parent / "tfds")


def tfds_build(*args, cwd):
    result = subprocess.run(
        [TFDS, "build", *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def manifest_lines(name):
    text = (REPO / "dummy_data" / name).read_text().splitlines()
    return [line.rsplit(maxsplit=1) for line in text if line and not line.startswith("#")]


def test_tfds_build_from_repo_root_then_tfds_load(tmp_path):
    data_dir = tmp_path / "data"
    tfds_build(
        "video_tfrecords",
        "--manual_dir=dummy_data",
        f"--data_dir={data_dir}",
        "--config=default",
        cwd=REPO,
    )
    for split, manifest in [
        ("train", "train.txt"),
        ("validation", "val.txt"),
        ("test", "test.txt"),
    ]:
        dataset, info = tfds.load(
            "video_tfrecords", split=split, data_dir=str(data_dir), with_info=True
        )
        names = info.features["label"].names
        stored = {e["filename"].decode(): e for e in tfds.as_numpy(dataset)}
        expected = dict(manifest_lines(manifest))
        assert {path: names[e["label"]] for path, e in stored.items()} == expected
        for path, example in stored.items():
            source = opencv_frames(REPO / "dummy_data" / path)
            assert example["video"].shape == source.shape
            assert min(psnr(a, b) for a, b in zip(source, example["video"])) >= 30


def test_json_config_from_the_command_line(tmp_path):
    data_dir = tmp_path / "data"
    config = '{"name": "tiny", "short_side": 24, "max_frames": 3, "num_workers": 1}'
    tfds_build(
        "video_tfrecords",
        "--manual_dir=dummy_data",
        f"--data_dir={data_dir}",
        f"--config={config}",
        cwd=REPO,
    )
    dataset = tfds.load("video_tfrecords/tiny", split="train", data_dir=str(data_dir))
    shapes = sorted(e["video"].shape for e in tfds.as_numpy(dataset))
    assert shapes == [(3, 24, 32, 3), (3, 24, 32, 3), (3, 32, 24, 3)]


def test_imports_flag_works_from_any_directory(tmp_path):
    """Needs the package installed (`pip install -e .`, as the README does)."""
    data_dir = tmp_path / "data"
    tfds_build(
        "video_tfrecords/native",
        "--imports=video_tfrecords",
        f"--manual_dir={REPO / 'dummy_data'}",
        f"--data_dir={data_dir}",
        cwd=tmp_path,
    )
    assert (
        data_dir / "video_tfrecords" / "native" / DATASET_VERSION / "dataset_info.json"
    ).exists()
    assert os.listdir(tmp_path) == ["data"]


def manual_dir_with_a_broken_video(tmp_path):
    """dummy_data's train split plus one file that is not a video."""
    manual = tmp_path / "manual"
    shutil.copytree(REPO / "dummy_data", manual)
    (manual / "videos" / "broken.mp4").write_bytes(b"not a video at all" * 100)
    with open(manual / "train.txt", "a") as f:
        f.write("videos/broken.mp4 juggling\n")
    return manual


def test_a_build_that_skips_a_video_exits_0_and_ends_with_a_summary(tmp_path):
    """Without a terminal (a log file, CI): progress lines, the skip above them, TFDS's INFO
    lines and DatasetInfo dump left out, and the summary last. A built-in config takes a build
    setting (num_workers) under its own name."""
    manual = manual_dir_with_a_broken_video(tmp_path)
    data_dir = tmp_path / "data"
    result = tfds_build(
        "video_tfrecords", f"--manual_dir={manual}", f"--data_dir={data_dir}",
        '--config={"name": "default", "num_workers": 2}', cwd=REPO,
    )  # fmt: skip
    assert re.search(r"^WARNING: Skipping .*train.txt:\d+: videos/broken.mp4: ", result.stderr, re.M)
    info = data_dir / "video_tfrecords" / "default" / DATASET_VERSION / "metadata.json"
    assert "  train: 3 examples written from 3 of 4 lines; 1 skipped, 0 kept with a note" in (
        result.stdout
    )
    assert "  validation: 2 examples written from 2 of 2 lines; 0 skipped" in result.stdout
    assert "  test: 1 example written from 1 of 1 line; 0 skipped" in result.stdout
    assert f"info.metadata['skipped'] and ['notes'] ({info})" in result.stdout
    (skipped,) = json.loads(info.read_text())["skipped"]  # where the summary points
    assert skipped["path"] == "videos/broken.mp4" and skipped["reason"].startswith("not a video")
    # The summary is the last thing printed; where DatasetInfo is, not its dump.
    last = result.stdout.rstrip().splitlines()
    assert last[-6].startswith("video_tfrecords/default/") and last[-1].startswith("  Why each")
    cache = data_dir / "downloads" / "video_tfrecords_cache" / "default"
    assert last[-2] == (
        "  The encoding cache is kept for a rebuild (about the dataset's size again; "
        f"keep_cache=False removes it): {cache}"
    )
    assert f"its DatasetInfo is {info.parent / 'dataset_info.json'}" in result.stdout
    # TFDS logs that it loads the builder before the builder can quiet it; then nothing of its.
    output = result.stdout + result.stderr
    assert [line for line in output.splitlines() if "INFO[" in line] == [
        f"INFO[build.py]: Loading dataset video_tfrecords from path: {REPO}/video_tfrecords/"
        "video_tfrecords_dataset_builder.py"
    ]
    for tfds_noise in ("tfds.core.DatasetInfo(", "features=FeaturesDict",
                       "Downloading and preparing", "Variant folder"):  # fmt: skip
        assert tfds_noise not in output, tfds_noise
    # A line of progress for each split's first video and its end (no carriage returns).
    for split, listed in (("train", 4), ("validation", 2), ("test", 1)):
        assert re.search(rf"^{split}: 1 of {listed} videos? done \(", result.stderr, re.M), split
        assert re.search(rf"^{split}: {listed} of {listed} videos? done \(", result.stderr, re.M)
    assert "\r" not in result.stderr and "Generating splits" not in result.stderr


def test_a_manifest_error_is_the_first_thing_printed_not_a_traceback(tmp_path):
    manual = tmp_path / "manual"
    shutil.copytree(REPO / "dummy_data", manual)
    (manual / "labels.txt").write_text("abseiling\njuggling\nsurfing\n")
    with open(manual / "val.txt", "a") as f:
        f.write("videos/train_0.mp4 jugling\n")
    result = subprocess.run(
        [TFDS, "build", "video_tfrecords", f"--manual_dir={manual}", f"--data_dir={tmp_path}",
         "--config=default"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    ours = [line for line in result.stderr.splitlines() if line.startswith("video_tfrecords: ")]
    assert ours == [
        f"video_tfrecords: {manual / 'val.txt'}:4: label 'jugling' is not in labels.txt "
        "(did you mean 'juggling'?)",
        "video_tfrecords: 1 problem(s) in the manifests: fix them and run again.",
    ]
    assert not list(tmp_path.glob("video_tfrecords/default/*/*.tfrecord*"))  # nothing decoded


def test_a_misspelt_config_field_is_named_with_its_fix(tmp_path):
    result = subprocess.run(
        [TFDS, "build", "video_tfrecords", "--manual_dir=dummy_data",
         f"--data_dir={tmp_path}", '--config={"name": "x", "shortside": 128}'],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    first = next(line for line in result.stderr.splitlines() if line.startswith("video_tfrecords"))
    assert first.startswith(
        "video_tfrecords: VideoConfig has no field 'shortside' (did you mean 'short_side'?)"
    )


def test_tfds_build_without_a_manual_dir_says_which_folder_it_wanted(tmp_path):
    result = subprocess.run(
        [TFDS, "build", "video_tfrecords", f"--data_dir={tmp_path}", "--config=default"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert f"Its manual dir {tmp_path}/downloads/manual does not exist" in result.stderr
    assert "train.txt" in result.stderr


def test_outside_the_tfds_command_importing_the_builder_leaves_hooks_and_logging_alone(tmp_path):
    """The tfds command's hooks (errors first, TFDS's INFO lines off, TFDS's noise filtered) are
    set where the command enters the package, not by importing the builder; a Builder made in
    a user's Python filters TFDS's warnings about its features when it is made."""
    code = (
        "import logging, sys\n"
        "hook, absl = sys.excepthook, logging.getLogger('absl')\n"
        "import tensorflow_datasets as tfds\n"
        "import video_tfrecords.video_tfrecords_dataset_builder as b\n"
        "print(sys.excepthook is hook, absl.filters == [])\n"
        f"b.Builder(config='default', data_dir={str(tmp_path)!r})\n"
        "print(sys.excepthook is hook, len(absl.filters))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    assert result.stdout.split() == ["True", "True", "True", "1"]


def test_ctrl_c_says_how_many_videos_are_kept_and_the_rerun_resumes(tmp_path):
    manual = tmp_path / "manual"
    lines = []
    for i in range(8):  # long enough that a build is still going after its first video
        frames = synthetic.moving_frames(400, 360, 640, seed=i)
        synthetic.write_video(str(manual / f"v{i}.mp4"), frames)
        lines.append(f"v{i}.mp4 class{i % 2}\n")
    (manual / "train.txt").write_text("".join(lines))
    data_dir = tmp_path / "data"
    command = [TFDS, "build", "video_tfrecords", f"--manual_dir={manual}",
               f"--data_dir={data_dir}", "--config=default"]  # fmt: skip
    build = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # a terminal's Ctrl-C reaches the whole process group
    )
    deadline = time.monotonic() + 300
    while not list(data_dir.glob("downloads/**/done.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(build.pid, signal.SIGINT)
    _, stderr = build.communicate(timeout=300)
    kept = len(list(data_dir.glob("downloads/**/done.json")))
    assert build.returncode == 130
    lines = [line for line in stderr.splitlines() if line.startswith("Interrupted")]
    assert lines == [
        f"Interrupted: {kept} video{'s' * (kept != 1)} encoded so far kept in the cache "
        f"({data_dir}/downloads/video_tfrecords_cache/default); run the same command to resume."
    ]
    assert 1 <= kept < 8 and "Traceback" not in stderr
    rerun = tfds_build(*command[2:], cwd=REPO)
    assert "train: 8 examples written from 8 of 8 lines" in rerun.stdout
