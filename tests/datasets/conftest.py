"""Session fixtures: raw fixture corpora written by the tests, and their prepared output."""
from __future__ import annotations

import pytest

from datasets_fixtures import (EMO_PARAMS, SONG_PARAMS, make_longemo, make_medmosaic,  # noqa: F401
                               make_songeval)


@pytest.fixture(scope="session")
def song_src(tmp_path_factory):
    return make_songeval(tmp_path_factory.mktemp("songeval_raw"))


@pytest.fixture(scope="session")
def clinical_src(tmp_path_factory):
    return make_medmosaic(tmp_path_factory.mktemp("medmosaic_raw"))


@pytest.fixture(scope="session")
def emotion_src(tmp_path_factory):
    return make_longemo(tmp_path_factory.mktemp("longemo_raw"))


@pytest.fixture(scope="session")
def song_out(song_src, tmp_path_factory):
    from harp_lib.corpora.datasets.songeval import prepare_song
    out = tmp_path_factory.mktemp("corpora") / "song"
    counts = prepare_song(song_src, out, SONG_PARAMS, progress=False)
    return out, counts


@pytest.fixture(scope="session")
def emotion_out(emotion_src, tmp_path_factory):
    from harp_lib.corpora.datasets.longemo import prepare_emotion
    out = tmp_path_factory.mktemp("corpora") / "emotion"
    counts = prepare_emotion(emotion_src, out, EMO_PARAMS, progress=False)
    return out, counts
