"""The entry points spell out their arguments, for editors and `help()`: the clip arguments are
`ClipSpec`'s, with its defaults (one source: a test fails when one drifts or is missing)."""

from __future__ import annotations

import dataclasses
import inspect
import pathlib
import subprocess
import sys

import pytest

import video_tfrecords
from video_tfrecords import ClipDecoder, ClipSource, ClipSpec, VideoConfig, clip_dataset

SPEC_DEFAULTS = {
    f.name: f.default for f in dataclasses.fields(ClipSpec) if f.default is not dataclasses.MISSING
}


def parameters(entry) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(entry).parameters)


@pytest.mark.parametrize("entry", [ClipDecoder, ClipSource, clip_dataset])
def test_every_clip_argument_is_in_the_signature_with_clip_specs_default(entry):
    found = parameters(entry)
    assert not any(p.kind is p.VAR_KEYWORD for p in found.values()), "a **kwargs hides names"
    assert "num_frames" in found and found["num_frames"].default is inspect.Parameter.empty
    # clip_dataset: its own seed (the clips' too) and mode / crop chosen by `training`
    own = {"seed": None, "mode": None, "crop": None} if entry is clip_dataset else {}
    for name, default in SPEC_DEFAULTS.items():
        assert name in found, f"{entry.__name__} lacks {name}"
        assert found[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert found[name].default == own.get(name, default), name


def test_video_config_shows_its_fields():
    found = parameters(VideoConfig)
    fields = {f.name: f for f in dataclasses.fields(VideoConfig)}
    assert list(found) == list(fields)
    assert found["short_side"].default == 256 and found["audio_rate"].default is None
    with pytest.raises(ValueError, match="did you mean 'fps'"):
        VideoConfig(name="x", fsp=10)


def test_the_package_ships_its_type_marker():
    package = pathlib.Path(video_tfrecords.__file__).parent
    assert (package / "py.typed").is_file()
    pyproject = (package.parent / "pyproject.toml").read_text()
    assert '"py.typed"' in pyproject


def test_spark_build_help_names_the_readmes_master_default():
    done = subprocess.run(
        [sys.executable, "-m", "video_tfrecords.spark_build", "--help"],
        capture_output=True, text=True, check=True,
    )
    readme = (pathlib.Path(video_tfrecords.__file__).parent.parent / "README.md").read_text()
    assert "local[*]" in readme and "spark-submit" in readme
    help_text = " ".join(done.stdout.split())
    assert "spark-submit's master, else local[*]" in help_text
