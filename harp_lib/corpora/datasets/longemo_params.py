"""LongEmo construction knobs and source layout: :class:`EmotionParams` (params.yaml
``datasets.emotion``), the files :func:`emotion_expected` checks for, the licence URLs and the
emotion dimensions / non-target codes shared by the other ``longemo_*`` steps."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harp_lib.corpora.datasets.common import Expected

__all__ = ["EmotionParams", "emotion_expected", "MSP_URL", "MSPC_URL", "NV_URL", "DIMS", "NON_TARGET_CODES"]

MSP_URL = "https://www.lab-msp.com/MSP/MSP-Podcast.html (signed academic licence)"
MSPC_URL = "https://www.lab-msp.com/MSP/MSP-Conversation.html (signed academic licence)"
NV_URL = "NaturalVoices (MSP lab; signed licence): all_data.json and podcasts_flac/"
DIMS = ("Valence", "Arousal", "Dominance")
#: Consensus codes that never become a state/locate target (no agreement, "Other").
NON_TARGET_CODES = ("X", "O")


@dataclass(frozen=True)
class EmotionParams:
    """Knobs of LongEmo construction (params.yaml ``datasets.emotion``); defaults are the paper's."""
    src: str = "data/raw/longemo"
    podcast_dir: str = "msp_podcast_v2.0"
    conversation_dir: str = "msp_conversation_v2.0"
    episodes: Optional[tuple] = None   # explicit MSP-PODCAST ids; None = Test1 selection below
    max_train_utts: int = 10           # keep conversations with < 10 MSP-Podcast Train utterances ...
    max_train_ratio: float = 0.10      # ... and train/test1 ratio < 10 %
    st_min_cf: float = 0.5             # consensus confidence of st_event candidates
    st_spk_share: float = 0.5          # dominant-speaker share when SpkrID is missing
    st_context_sec: float = 60.0       # >= 2 same-speaker segments with text in the preceding 60 s
    st_context_min: int = 2
    ctx_sec: float = 20.0              # topic context: ±20 s, <= 300 characters a side
    ctx_chars: int = 300
    topic_chars: int = 200             # characters of context given to the topic generator
    ct_window_sec: float = 30.0        # trend windows: 30 s (two 15 s halves), step 10 s
    ct_step_sec: float = 10.0
    ct_min_delta: float = 0.08         # |mean(half2) - mean(half1)| on the trace / 100
    ct_spk_share: float = 0.7
    ct_nms_sec: float = 60.0           # NMS margin between trend windows (and flat windows)
    multi_window_sec: float = 60.0     # comparison windows: 60 s step 30 s
    multi_step_sec: float = 30.0
    multi_min_cover_sec: float = 10.0  # each speaker > 10 s of single-speaker speech
    multi_min_spread: float = 0.10
    cap_per_type: int = 3
    flat_slots: int = 1                # change slots reserved for a flat window (code: 1; doc said 2)
    comparison_pad_sec: float = 240.0  # 60 s window padded to 300 s, >= 10 s each side
    comparison_min_side_sec: float = 10.0
    locate_max_expand_sec: float = 150.0
    cluster_span_sec: float = 300.0    # locate_hard: >= 3 same-speaker same-emotion events in 300 s
    cluster_min_events: int = 3
    cluster_pad_sec: float = 30.0
    max_hard_per_episode: int = 3
    quote_min_words: int = 4
    quote_max_words: int = 12
    clip_min_sec: float = 3.0          # clean speaker clips: 3-8 s, SNR >= 20, single speaker
    clip_max_sec: float = 8.0
    clip_min_snr: float = 20.0
    clips_per_speaker: int = 5
    emotion_clips_per_code: int = 20
    emotion_clip_max_sec: float = 8.0
    time_round_sec: float = 30.0       # "around 3 and a half minutes"
    topic: str = "keywords"            # keywords | qwen (the paper's PAPER_TOPIC_MODEL, local weights)
    seed: int = 42
    sample_rate: int = 16000
    audio: str = "convert"             # convert (16 kHz mono WAV) | link (hard-link the FLAC)

    def __post_init__(self):
        if self.episodes is not None:
            object.__setattr__(self, "episodes", tuple(self.episodes))


def emotion_expected(p: EmotionParams) -> list[Expected]:
    pod, conv = p.podcast_dir, p.conversation_dir
    return [
        Expected("all_data.json", "NaturalVoices segments (about 1.7 GB)", NV_URL),
        Expected("podcasts_flac", "NaturalVoices episode audio", NV_URL, glob="*.flac"),
        Expected(f"{pod}/Labels/labels_consensus.csv", "MSP-Podcast v2.0 consensus labels", MSP_URL),
        Expected(f"{pod}/Labels/labels_detailed.csv", "MSP-Podcast v2.0 per-annotator labels", MSP_URL),
        Expected(f"{pod}/Partitions.txt", "MSP-Podcast v2.0 partitions", MSP_URL),
        Expected(f"{pod}/Transcripts", "MSP-Podcast v2.0 transcripts", MSP_URL, glob="*.txt"),
        Expected(f"{conv}/partitions.txt", "MSP-Conversation v2.0 partitions", MSPC_URL),
        Expected(f"{conv}/Time_Labels/conversations.txt", "MSP-Conversation offsets", MSPC_URL),
        Expected(f"{conv}/Time_Labels/conversation_parts.txt", "MSP-Conversation parts", MSPC_URL),
        Expected(f"{conv}/Time_Labels/segments.json", "MSP-Conversation utterance times", MSPC_URL),
        Expected(f"{conv}/Traces", "MSP-Conversation continuous traces", MSPC_URL, glob="*/*.csv"),
    ]
