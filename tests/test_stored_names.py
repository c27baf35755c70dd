"""`records/` owns the stored record: outside it, no module spells a stored feature's name
(the build and every reader take it from `records.schema`), so that a feature is renamed or
added in one place."""

from __future__ import annotations

import ast
import dataclasses
import pathlib

import numpy as np

from video_tfrecords.config import VideoConfig
from video_tfrecords.records import schema

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "video_tfrecords"
# Stored names that are also other public words, spelled as those outside records/: the keys
# of a reader's output (ClipSource's dict and tfds.load's both take the features' names), the
# clip arguments (ClipSpec's `fps`, `audio`, `labels`, `captions`, `segment`, labels="video"),
# VideoConfig's `audio_rate`, and a JSON Lines manifest's keys (`label`, `labels`, `captions`).
SHARED_WORDS = {
    "video", "label", "labels", "captions", "filename", "audio", "audio_rate", "fps", "segment",
}  # fmt: skip
# A published format's own key that reads like a stored name (ActivityNet Captions' JSON).
OTHERS_WORDS = {("make_manifests/activitynet_json.py", "timestamps")}


def stored_names() -> set[str]:
    """Every feature a dataset may store (audio and all annotations), by its name in a record:
    a Sequence's fields as TFDS flattens them ("label_segments/start")."""
    kinds = frozenset(schema.ANNOTATIONS)
    features = schema.features(VideoConfig(name="all", audio_rate=16000), kinds)
    names = set()
    for name, feature in features.items():
        names.add(name)
        inner = getattr(feature, "feature", None)
        for field in getattr(inner, "keys", lambda: ())():
            names.add(f"{name}/{field}")
    return names


def spelled(path: pathlib.Path, names: set[str], root: pathlib.Path = PACKAGE.parent) -> list[str]:
    """`FILE:LINE: 'name'` for each string literal in `path` that is one of `names`, docstrings
    and `__all__` lists (names of functions) aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            skipped.update(id(n) for n in ast.walk(node.value))
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in skipped
    ]


def test_the_names_checked_are_the_schemas_and_cover_every_kind_of_feature():
    names = stored_names()
    assert {"timestamps", "has_audio", "codec", "start_frame", "video_fingerprint"} <= names
    assert {"span_start", "label_segments/label", "captions/text"} <= names
    assert SHARED_WORDS <= names  # (each a stored name, spelled elsewhere for its other job)


def test_no_module_outside_records_spells_a_stored_features_name():
    names = stored_names() - SHARED_WORDS
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "records"
        for hit in spelled(path, names)
        if (str(path.relative_to(PACKAGE)), hit.rsplit(" ", 1)[1].strip("'")) not in OTHERS_WORDS
    ]
    assert found == [], "stored names outside records/: use records.schema's constants"


def test_the_scan_finds_a_name_and_leaves_docstrings_and_all_alone(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        '"""Reads `has_audio`."""\n__all__ = ["start_frame"]\n'
        'def f(example):\n    """has_audio"""\n    return example["has_audio"], "fps"\n'
    )
    assert spelled(source, stored_names() - SHARED_WORDS, tmp_path) == ["m.py:5: 'has_audio'"]


def test_the_stored_format_does_not_depend_on_how_clips_are_keyed_or_cut():
    # records/ reads what the build wrote; how seeded clips are keyed (clips.keys) and how a
    # clip's audio is cut (clips.audio) are the readers' (they hand records the fingerprint).
    imported = set()
    for path in (PACKAGE / "records").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {f"{node.module}.{alias.name}" for alias in node.names}
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
    assert not imported & {
        "video_tfrecords.clips.keys", "video_tfrecords.clips.audio",
    }, sorted(name for name in imported if ".clips" in name)  # fmt: skip


def test_the_typed_example_has_a_field_per_stored_feature_each_named_by_a_constant():
    constants = {v for name, v in vars(schema).items() if name.isupper() and isinstance(v, str)}
    fields = {field.name for field in dataclasses.fields(schema.Example)}
    features = schema.features(
        VideoConfig(name="all", audio_rate=16000), frozenset(schema.ANNOTATIONS)
    )
    assert fields == set(features) and fields <= constants


def test_each_fields_kind_is_what_tfds_serializes_it_as():
    # What TFDS serializes each feature as (a tf.train.Feature holds bytes, int64s or floats:
    # strings as bytes, floats as floats, other numbers and bools as int64s), against the kind
    # `schema.Example` declares and readers check values by.
    features = schema.features(
        VideoConfig(name="all", audio_rate=16000), frozenset(schema.ANNOTATIONS)
    )

    def word(dtype: np.dtype) -> str:
        return "bytes" if dtype.kind in "OSU" else "float" if dtype.kind == "f" else "int"

    tfds_kinds = {}
    for name, info in features.get_serialized_info().items():
        inner = info.items() if isinstance(info, dict) else [(None, info)]
        for field, tensor in inner:  # a Sequence's fields, flattened as in a record
            tfds_kinds[name if field is None else f"{name}/{field}"] = word(
                np.dtype(tensor.np_dtype)
            )
    declared = {name: kind for name, (kind, _, _) in schema.record_kinds().items()}
    assert declared == tfds_kinds
