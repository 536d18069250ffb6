"""Registry module for extraction backends (listed in ``harp_lib/__init__.py``; imported on the first registry lookup).

Importing it registers every offline and paper backend under ``@register(stage, name)``;
no model library is imported until a backend is constructed.

>>> from harp_lib.config import get_backend
>>> get_backend("labeler", "emotion_prosody").name
'emotion_prosody'
"""
from harp_lib.extract import asr, whisper_ct2, diarization, embedders, labelers, cough_labeler  # noqa: F401  (registers)
from harp_lib.extract import aesthetics_labeler, overlap, paper_pyannote, paper_mert, paper_text  # noqa: F401  (registers)
from harp_lib.extract import paper_audio, paper_emotion, paper_clinical_music, songs, sound_events  # noqa: F401  (registers)
from harp_lib.extract import symptoms, vad  # noqa: F401  (registers)

OFFLINE = {
    "vad": ["silero"], "diarization": ["spectral"], "song_boundaries": ["kernel_cpd"],
    "asr": ["whisper_ct2", "pocketsphinx"], "text_emb": ["minilm"], "audio_emb": ["resemblyzer", "audio_stats"],
    "domain_emb": ["egemaps", "music_stats"], "labeler": ["emotion_prosody", "cough_burst", "symptom_kws", "aesthetics", "yamnet"],
    "overlap": ["seg30"],
}
PAPER = {
    "vad": ["pyannote"], "diarization": ["pyannote"], "song_boundaries": ["mert"], "asr": ["whisper"],
    "text_emb": ["bge_small"], "audio_emb": ["pyannote_embedding", "openbeats", "clap"],
    "domain_emb": ["emotion2vec", "mert"],
    "labeler": ["wavlm_ser", "cser", "coughkit", "music_aesthetics"],
}
