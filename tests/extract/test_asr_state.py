"""pocketsphinx transcripts do not depend on what the same decoder decoded before (issue 8)."""
import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.config import create_backend
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Segment


@pytest.mark.slow
def test_decoding_x_is_identical_whether_or_not_y_was_decoded_first(speech_bench):
    wave = audio.load(speech_bench / "emotion" / "recordings" / "rec1.wav", sr=16000)
    segs = read_jsonl(speech_bench / "emotion" / "segments.jsonl", Segment)
    x = wave[int(segs[1].start * 16000):int(segs[1].end * 16000)]
    # y: another voice, scaled down and with a DC-free low hum, so live CMN would drift far
    y = wave[int(segs[0].start * 16000):int(segs[0].end * 16000)] * 0.2
    y = y + 0.05 * np.sin(2 * np.pi * 120 * np.arange(len(y)) / 16000).astype(np.float32)
    fresh = create_backend("asr", "pocketsphinx").transcribe(x, 16000)
    used = create_backend("asr", "pocketsphinx")
    used.transcribe(y, 16000)
    used.transcribe(np.concatenate([y, y]), 16000)
    after = used.transcribe(x, 16000)
    assert fresh["text"]                      # real words decoded, not an empty comparison
    assert after == fresh                     # text and word times byte-identical
