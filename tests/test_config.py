"""VideoConfig's errors: each names the field, says what it takes, and lists the valid fields."""

import pytest

from video_tfrecords import VideoConfig


def test_an_unknown_field_is_named_with_the_nearest_valid_one_and_the_list():
    with pytest.raises(ValueError) as error:
        VideoConfig(name="x", shortside=128)
    text = str(error.value)
    assert "'shortside' (did you mean 'short_side'?)" in text
    assert "Valid fields:" in text and "jpeg_quality" in text and "segment_frames" in text


def test_an_unknown_field_without_a_near_match_still_lists_the_fields():
    with pytest.raises(ValueError, match=r"no field 'colour'\. Valid fields: name, "):
        VideoConfig(name="x", colour="red")


@pytest.mark.parametrize(
    "field,value,takes",
    [
        ("fps", "ten", "a positive number or None"),
        ("fps", float("nan"), "a positive number or None"),
        ("short_side", 12.5, "a positive int or None"),
        ("short_side", 0, "a positive int or None"),
        ("size", [64, "a"], "two positive ints"),
        ("size", [64], "two positive ints"),
        ("jpeg_quality", 101, "an int from 1 to 100"),
        ("strict", "yes", "true or false"),
        ("num_workers", -1, "an int >= 0"),
        ("segment_frames", True, "a positive int or None"),
    ],
)
def test_a_wrong_value_names_its_field_and_what_it_takes(field, value, takes):
    with pytest.raises(ValueError) as error:
        VideoConfig(name="x", **{field: value})
    text = str(error.value)
    assert text.startswith(f"VideoConfig 'x': {field} must be ") and takes in text
    assert text.endswith(f", got {value!r}")


def test_every_problem_is_reported_at_once():
    with pytest.raises(ValueError, match="jpeg_quality must .*; strict must"):
        VideoConfig(name="x", jpeg_quality=0, strict=1)


def test_valid_values_from_json_are_normalised():
    config = VideoConfig(name="x", size=[32, 48], fps=10)
    assert config.size == (32, 48) and config.fps == 10


def test_a_built_in_config_takes_build_settings_under_its_own_name(tmp_path):
    """`--config '{"name": "default", "num_workers": 2}'`: the built-in config, built with two
    workers and without its cache; what it stores is the built-in's."""
    import tensorflow_datasets as tfds

    from video_tfrecords.config import DEFAULT, NATIVE
    from video_tfrecords.video_tfrecords_dataset_builder import Builder

    given = VideoConfig(name="default", num_workers=2, keep_cache=False)
    builder = Builder(config=given, data_dir=str(tmp_path))
    assert builder.builder_config is DEFAULT
    assert (builder.build_config.num_workers, builder.build_config.keep_cache) == (2, False)
    assert builder.build_config.frame_fields() == DEFAULT.frame_fields()
    assert builder.data_path.name == DEFAULT.version and builder.data_path.parent.name == "default"
    assert Builder(config="native", data_dir=str(tmp_path)).build_config is NATIVE
    assert tfds.builder("video_tfrecords", config=given, data_dir=str(tmp_path)).builder_config is (
        DEFAULT
    )


def test_a_built_in_name_with_other_stored_frames_says_to_rename_it(tmp_path):
    from video_tfrecords.config import ConfigError
    from video_tfrecords.video_tfrecords_dataset_builder import Builder

    with pytest.raises(ConfigError) as raised:
        Builder(config=VideoConfig(name="native", short_side=128, num_workers=1))
    message = str(raised.value)
    assert "'native' is a built-in config" in message and "short_side None -> 128" in message
    assert '{"name": "native_mine", ...}' in message and "num_workers, keep_cache" in message
