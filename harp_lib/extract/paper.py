"""The paper's extraction models (HARP_REFERENCE §2.2-2.3) as real loading code.

They need optional packages, hub weights and sometimes tokens.  Libraries are imported only
when a backend is constructed, and every constructor goes through one loader
(:func:`harp_lib.extract.paper_models.paper_backend`): whatever goes wrong raises ONE
:class:`BackendLoadError` naming the environment to create (``scripts/make_env.sh <env>``) or the
``harp fetch-weights`` command to run; ``harp extract`` stops on it.  What each backend loads
is the table ``paper_models.PAPER_MODELS`` (also read by ``harp doctor`` and ``harp fetch-weights``).
pyannote.audio and laion-clap need their own environments (docs/environments.md).

>>> from harp_lib.config import create_backend
>>> try:
...     create_backend("asr", "whisper")
... except BackendLoadError as e:
...     print("BackendLoadError")
BackendLoadError
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.extract.embedders import l2norm
from harp_lib.extract.paper_models import (PAPER_MODELS, BackendLoadError, hub_offline, paper_backend,
                           whisper_cache)
from harp_lib.extract.paper_models import require as _require
from harp_lib.extract.turns import Turn, relabel_by_first_appearance

__all__ = ["require", "hf_token", "hf_load", "BackendLoadError"]

#: backend registry name (and stage) -> PAPER_MODELS key, for the module-level helpers below
_KEY_OF = {"pyannote": "diarization_pyannote"}


def require(module: str, key: str, what: str):
    """Import ``module`` for the paper backend ``key`` (a PAPER_MODELS key) or raise a
    BackendLoadError naming the environment (``scripts/make_env.sh <env>``) it belongs in."""
    return _require(module, PAPER_MODELS[_KEY_OF.get(key, key)], what)


def hf_token(what: str) -> str:
    """The Hugging Face token from HF_TOKEN, $HF_HOME/token or ~/.cache/huggingface/token, or a clear error."""
    tok = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    home = Path(os.environ["HF_HOME"]) if os.environ.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    p = home / "token"
    if not tok and p.exists():
        tok = p.read_text().strip()
    if not tok:
        raise BackendLoadError(f"{what} uses a gated Hugging Face model: accept its licence on huggingface.co "
                               f"and set HF_TOKEN=<your token> (or run `hf auth login`).")
    return tok


def hf_load(what: str, fn, *args, **kwargs):
    """Call a ``from_pretrained``-style loader outside a paper backend's constructor (e.g. the
    Whisper baseline of ``harp bench``); any failure becomes one BackendError."""
    try:
        return fn(*args, **kwargs)
    except BackendError:
        raise
    except Exception as e:  # noqa: BLE001 - OSError / LocalEntryNotFoundError / HTTP errors
        detail = " ".join(str(e).split())[:200]
        hint = ("offline mode is on (HF_HUB_OFFLINE) and the weights are not in the local cache: "
                f"`hf download {what.split()[-1]}` once with network access, or set HF_HOME to a cache "
                "that has them" if hub_offline() else
                "check network access to huggingface.co, HF_TOKEN for gated models, or set HF_HOME")
        raise BackendError(f"{what}: cannot load weights ({type(e).__name__}: {detail}); {hint}.") from None


def _device(torch) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _resample(wave: np.ndarray, sr: int, target: int) -> np.ndarray:
    from harp_lib.core.audio import resample
    return resample(np.asarray(wave, np.float32), sr, target)


# ------------------------------------------------------------------------- diarization
@register("diarization", "pyannote")
@paper_backend("diarization_pyannote")
class PyannoteDiarizer:
    """pyannote/speaker-diarization-community-1 (pyannote.audio 4, gated: HF_TOKEN).

    ``num_speakers`` / ``min_speakers`` / ``max_speakers`` go to the pipeline call as given."""
    name = "pyannote"
    model_id = "pyannote/speaker-diarization-community-1"

    def __init__(self, checkpoint: str = model_id, num_speakers: Optional[int] = None,
                 min_speakers: Optional[int] = None, max_speakers: Optional[int] = None):
        from harp_lib.extract.diarization import speaker_bounds
        try:
            speaker_bounds(num_speakers, min_speakers, max_speakers)  # one error line before any download
        except ValueError as e:
            raise BackendError(f"diarization 'pyannote': {e}") from None
        # passed to the pipeline as given (it applies num over min/max itself)
        self.counts = {k: int(v) for k, v in (("num_speakers", num_speakers), ("min_speakers", min_speakers),
                                               ("max_speakers", max_speakers)) if v is not None}
        os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
        audio = require("pyannote.audio", "pyannote", "diarization 'pyannote'")
        torch = require("torch", "pyannote", "diarization 'pyannote'")
        tok = hf_token(f"diarization 'pyannote' ({checkpoint})")
        self.pipeline = audio.Pipeline.from_pretrained(checkpoint, token=tok)
        if self.pipeline is None:
            raise RuntimeError(f"{checkpoint}: Pipeline.from_pretrained returned None (licence not accepted, "
                               f"or the pipeline is not in the cache)")
        self.pipeline.to(torch.device(_device(torch)))
        self.torch = torch

    def segment(self, wave, sr=16000, speech=None) -> list[Turn]:
        wav = self.torch.from_numpy(np.asarray(wave, np.float32))[None]
        out = self.pipeline({"waveform": wav, "sample_rate": sr}, **self.counts)
        ann = getattr(out, "speaker_diarization", out)
        turns = [Turn(s.start, s.end, str(lab)) for s, _, lab in ann.itertracks(yield_label=True)]
        return relabel_by_first_appearance(turns)


@register("vad", "pyannote")
@paper_backend("diarization_pyannote")
class PyannoteVAD:
    """Speech regions = union of the pyannote diarization turns."""
    name = "pyannote"
    model_id = PyannoteDiarizer.model_id

    def __init__(self):
        self.diar = PyannoteDiarizer()

    def speech(self, wave, sr=16000):
        from harp_lib.core.timespan import Span, merge_spans
        return merge_spans(Span(t.start, t.end) for t in self.diar.segment(wave, sr))


@register("audio_emb", "pyannote_embedding")
@paper_backend("pyannote_embedding")
class PyannoteEmbedder:
    """pyannote/embedding speaker vectors (512-d, whole-window inference; gated: HF_TOKEN)."""
    name = "pyannote_embedding"
    model_id = "pyannote/embedding"
    dim = 512

    def __init__(self):
        audio = require("pyannote.audio", "pyannote_embedding", "audio_emb 'pyannote_embedding'")
        torch = require("torch", "pyannote_embedding", "audio_emb 'pyannote_embedding'")
        tok = hf_token("audio_emb 'pyannote_embedding'")
        model = audio.Model.from_pretrained(self.model_id, token=tok)
        self.inference = audio.Inference(model, window="whole", device=torch.device(_device(torch)))
        self.torch = torch

    def embed(self, waves, sr=16000):
        rows = [np.asarray(self.inference({"waveform": self.torch.from_numpy(np.asarray(w, np.float32))[None],
                                           "sample_rate": sr})).reshape(-1) for w in waves]
        return l2norm(np.asarray(rows)) if rows else np.zeros((0, self.dim), np.float32)


# ------------------------------------------------------------------------- MERT
class _Mert:
    model_id = "m-a-p/MERT-v1-95M"
    sr = 24000

    def __init__(self, what: str, layer: int = -1):
        torch = require("torch", "mert", what)
        tr = require("transformers", "mert", what)
        self.model = tr.AutoModel.from_pretrained(self.model_id,
                             trust_remote_code=True).eval()
        self.proc = tr.Wav2Vec2FeatureExtractor.from_pretrained(self.model_id,
                            trust_remote_code=True)
        self.device = _device(torch)
        self.model.to(self.device)
        self.torch, self.layer = torch, layer

    def embed_24k(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        out = []
        with self.torch.inference_mode():
            for w in waves:
                x = self.proc(w, sampling_rate=self.sr, return_tensors="pt")
                x = {k: v.to(self.device) for k, v in x.items()}
                h = self.model(**x, output_hidden_states=True).hidden_states[self.layer]
                out.append(h.mean(1)[0].float().cpu().numpy())
        return np.asarray(out)


@register("song_boundaries", "mert")
@paper_backend("mert")
class MertSongs:
    """MERT-v1-95M window embeddings (10 s windows, 2 s hop, last layer, L2-normalised) ->
    ruptures KernelCPD(rbf, min 90 s, pen 12) -> SONG_NN (HARP_REFERENCE §2.2)."""
    name = "mert"
    model_id = _Mert.model_id

    def __init__(self, min_song_sec: float = 90.0, win_sec: float = 10.0, hop_sec: float = 2.0,
                 pen: float = 12.0):
        self.mert = _Mert("song_boundaries 'mert'")
        require("ruptures", "mert", "song_boundaries 'mert'")
        self.min_song_sec, self.win_sec, self.hop_sec, self.pen = min_song_sec, win_sec, hop_sec, pen

    def segment(self, wave, sr=16000, speech=None) -> list[Turn]:
        import ruptures as rpt
        from harp_lib.extract.songs import window_times
        w24 = _resample(wave, sr, 24000)
        dur = len(w24) / 24000
        starts = window_times(dur, self.win_sec, self.hop_sec)
        x = l2norm(self.mert.embed_24k([w24[int(s * 24000): int((s + self.win_sec) * 24000)] for s in starts]))
        bkps = []
        if len(x) > 1:
            bkps = rpt.KernelCPD(kernel="rbf", min_size=max(1, int(self.min_song_sec / self.hop_sec))) \
                .fit(x).predict(pen=self.pen)[:-1]
        edges = [0.0, *[float(starts[b]) for b in bkps], dur]
        return [Turn(a, b, f"SONG_{i + 1:02d}") for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))]


@register("domain_emb", "mert")
@paper_backend("mert")
class MertEmbedder:
    """MERT-v1-95M mean last-layer embedding at 24 kHz (768-d)."""
    name = "mert"
    model_id = _Mert.model_id
    dim = 768

    def __init__(self):
        self.mert = _Mert("domain_emb 'mert'")

    def embed(self, waves, sr=16000):
        return l2norm(self.mert.embed_24k([_resample(w, sr, 24000) for w in waves]))


# ------------------------------------------------------------------------- ASR / text
@register("asr", "whisper")
@paper_backend("whisper")
class WhisperASR:
    """openai-whisper large-v3-turbo, one call per segment, word timestamps."""
    name = "whisper"
    model_id = "openai-whisper large-v3-turbo"

    def __init__(self, model: str = "large-v3-turbo", language: Optional[str] = "en"):
        whisper = require("whisper", "whisper", "asr 'whisper'")
        torch = require("torch", "whisper", "asr 'whisper'")
        root = whisper_cache()
        if hub_offline() and not (root / f"{model}.pt").is_file():
            # openai-whisper would download from its own URL: offline runs never do
            raise FileNotFoundError(f"{root / (model + '.pt')} does not exist")
        self.model = whisper.load_model(model, device=_device(torch), download_root=str(root))
        self.fp16 = _device(torch) == "cuda"
        self.language = language

    def transcribe(self, wave, sr=16000, speech=None) -> dict:
        if speech is not None and len(speech) == 0:
            return {"text": "", "words": []}
        r = self.model.transcribe(_resample(wave, sr, 16000), fp16=self.fp16, language=self.language,
                                  word_timestamps=True)
        words = [[w["word"].strip(), round(w["start"], 3), round(w["end"], 3)]
                 for s in r.get("segments", []) for w in s.get("words", [])]
        return {"text": r["text"].strip(), "words": words}


@register("text_emb", "bge_small")
@paper_backend("bge_small")
class BgeSmallEmbedder:
    """BAAI/bge-small-en-v1.5 through sentence-transformers, normalised (384-d)."""
    name = "bge_small"
    model_id = "BAAI/bge-small-en-v1.5"
    dim = 384

    def __init__(self):
        st = require("sentence_transformers", "bge_small", "text_emb 'bge_small'")
        self.model = st.SentenceTransformer(self.model_id)

    def embed(self, texts):
        return np.asarray(self.model.encode(list(texts), normalize_embeddings=True), np.float32)


# ------------------------------------------------------------------------- general audio
@register("audio_emb", "openbeats")
@paper_backend("openbeats")
class OpenBeatsEmbedder:
    """espnet/OpenBEATS-Large-i2-as20k, mean-pooled patch embeddings (1024-d), in memory."""
    name = "openbeats"
    model_id = "espnet/OpenBEATS-Large-i2-as20k"
    dim = 1024

    def __init__(self, chunk_seconds: float = 15.0):
        ob = require("openbeats.model", "openbeats", "audio_emb 'openbeats'")
        self.model = ob.OpenBeats.from_pretrained(self.model_id)
        self.chunk_seconds = chunk_seconds

    def embed(self, waves, sr=16000):
        import soundfile as sf
        rows = []
        with tempfile.TemporaryDirectory() as d:
            for i, w in enumerate(waves):
                p = os.path.join(d, f"{i}.wav")
                sf.write(p, np.asarray(w, np.float32), sr)
                out = self.model.encode_file(p, chunk_seconds=self.chunk_seconds)
                pe = np.asarray(getattr(out, "patch_embeddings", out))
                rows.append(pe.reshape(-1, pe.shape[-1]).mean(0))
        return l2norm(np.asarray(rows))


@register("audio_emb", "clap")
@paper_backend("clap")
class ClapEmbedder:
    """LAION-CLAP (630k-audioset-best), 512-d; audio and text share the space, so
    ``embed_text`` gives text-to-audio search.  Fixed 10 s windows (non-fusion CLAP crops
    randomly otherwise).  Needs its own numpy<2 environment (docs/environments.md)."""
    name = "clap"
    model_id = "laion/clap 630k-audioset-best"
    dim = 512
    CKPT_REPO, CKPT_FILE = "lukewys/laion_clap", "630k-audioset-best.pt"

    def __init__(self, ckpt: Optional[str] = None):
        lc = require("laion_clap", "clap", "audio_emb 'clap'")   # builds bert/roberta/bart tokenizers
        ckpt = ckpt or os.environ.get("HARP_CLAP_CKPT")
        if not ckpt:
            # from the HF cache (honours HF_HUB_OFFLINE); laion_clap's own load_ckpt() would wget
            # it into site-packages, bypassing both
            hub = require("huggingface_hub", "clap", "audio_emb 'clap'")
            ckpt = hub.hf_hub_download(self.CKPT_REPO, self.CKPT_FILE)
        self.model = lc.CLAP_Module(enable_fusion=False)           # roberta-base text branch
        # transformers 5 builds an EMPTY tokenizer (5 tokens) when roberta-base's files are not
        # in the offline cache, instead of raising: text embeddings would be silently wrong
        n = len(getattr(self.model, "tokenize", None) or ())
        if n < 1000:
            raise FileNotFoundError(f"roberta-base tokenizer has {n} tokens: its files are not in the HF cache")
        self.model.load_ckpt(ckpt, verbose=False)

    def embed(self, waves, sr=16000):
        rows = []
        for w in waves:
            x = _resample(w, sr, 48000)
            n = 480000
            wins = [x[i:i + n] for i in range(0, max(1, len(x)), n)] or [x]
            wins = [np.pad(v, (0, n - len(v))) for v in wins]
            e = self.model.get_audio_embedding_from_data(x=np.stack(wins), use_tensor=False)
            rows.append(np.asarray(e).mean(0))
        return l2norm(np.asarray(rows))

    def embed_text(self, texts):
        return l2norm(np.asarray(self.model.get_text_embedding(list(texts), use_tensor=False)))


# ------------------------------------------------------------------------- emotion
@register("labeler", "wavlm_ser")
@paper_backend("wavlm_ser")
class WavLMSER:
    """3loi/SER-Odyssey-Baseline-WavLM-Categorical: first 15 s, config mean/std, softmax."""
    name = "wavlm_ser"
    model_id = "3loi/SER-Odyssey-Baseline-WavLM-Categorical"

    def __init__(self, max_sec: float = 15.0):
        self.torch = require("torch", "wavlm_ser", "labeler 'wavlm_ser'")
        tr = require("transformers", "wavlm_ser", "labeler 'wavlm_ser'")
        self.model = tr.AutoModelForAudioClassification.from_pretrained(self.model_id, trust_remote_code=True).eval()
        self.max_sec = max_sec

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        from harp_lib.core.labels import normalize_label
        w = _resample(wave, sr, 16000)[: int(self.max_sec * 16000)]
        cfg = self.model.config
        w = (w - getattr(cfg, "mean", 0.0)) / (getattr(cfg, "std", 1.0) + 1e-6)
        x = self.torch.from_numpy(w.astype(np.float32))[None]
        with self.torch.inference_mode():
            logits = self.model(x, self.torch.ones_like(x))
        logits = getattr(logits, "logits", logits)
        p = self.torch.softmax(logits[0], -1).numpy()
        names = [normalize_label("emotion", cfg.id2label[i]) for i in range(len(p))]
        scores = {n: round(float(v), 4) for n, v in zip(names, p)}
        return {"primary": names[int(np.argmax(p))], "scores": scores}


def _cser_model(torch):
    nn = torch.nn

    class CSER(nn.Module):
        """WavLM-Large per-second features -> 2 x BiLSTM(2 layers, 512, dropout 0.5) -> 3."""

        def __init__(self, wavlm):
            super().__init__()
            self.wavlm = wavlm
            self.lstm1 = nn.LSTM(1024, 512, num_layers=2, batch_first=True, bidirectional=True, dropout=0.5)
            self.lstm2 = nn.LSTM(1024, 512, num_layers=2, batch_first=True, bidirectional=True, dropout=0.5)
            self.head = nn.Linear(1024, 3)

        def per_second(self, wave):  # wave: (n,) float tensor at 16 kHz
            feats = []
            n = wave.shape[0]
            for s in range(0, max(1, n), 30 * 16000):
                h = self.wavlm(wave[s:s + 30 * 16000][None]).last_hidden_state[0]
                feats.append(h)
            h = torch.cat(feats)[: int(np.ceil(n / 320))]
            t = int(np.ceil(h.shape[0] / 50))
            h = torch.nn.functional.pad(h, (0, 0, 0, t * 50 - h.shape[0]))
            return h.view(t, 50, -1).mean(1)

        def forward(self, wave):
            x = self.per_second(wave)[None]
            x, _ = self.lstm1(x)
            x, _ = self.lstm2(x)
            return self.head(x)[0].clamp(0, 1)  # (T, 3): arousal, valence, dominance

    return CSER


@register("labeler", "cser")
@paper_backend("cser")
class CSERLabeler:
    """Continuous SER (HARP_REFERENCE §2.3): per-second A/V/D from WavLM-Large + BiLSTMs;
    checkpoint from $HARP_CSER_CKPT (released on HF as cjli/harp)."""
    name = "cser"
    model_id = "microsoft/wavlm-large + CSER BiLSTM (cjli/harp)"

    def __init__(self, ckpt: Optional[str] = None):
        torch = require("torch", "cser", "labeler 'cser'")
        tr = require("transformers", "cser", "labeler 'cser'")
        ckpt = ckpt or os.environ.get("HARP_CSER_CKPT")
        if not ckpt or not Path(ckpt).exists():
            raise BackendLoadError("labeler 'cser' needs its checkpoint: set HARP_CSER_CKPT=/path/to/epoch_200.pt "
                                   "(released on Hugging Face as cjli/harp; `harp fetch-weights --backend cser` "
                                   "downloads it and prints the export line)"
                                   f"{'; not found: ' + ckpt if ckpt else ''}")
        wavlm = tr.WavLMModel.from_pretrained("microsoft/wavlm-large")
        self.model = _cser_model(torch)(wavlm)
        state = torch.load(ckpt, map_location="cpu", weights_only=True)
        self.model.load_state_dict(state.get("model", state), strict=False)
        self.model.eval()
        self.torch = torch

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        w = self.torch.from_numpy(_resample(wave, sr, 16000))
        with self.torch.inference_mode():
            avd = self.model(w).numpy()
        out = {}
        for j, k in enumerate(("arousal", "valence", "dominance")):
            out[k] = round(float(avd[:, j].mean()), 4)
            out[k + "_trace"] = {"mean": out[k], "std": round(float(avd[:, j].std()), 4)}
        return out


@register("domain_emb", "emotion2vec")
@paper_backend("emotion2vec")
class Emotion2VecEmbedder:
    """emotion2vec_base through funasr, utterance-level 768-d embedding."""
    name = "emotion2vec"
    model_id = "emotion2vec/emotion2vec_base"
    dim = 768

    def __init__(self):
        funasr = require("funasr", "emotion2vec", "domain_emb 'emotion2vec'")
        self.model = funasr.AutoModel(model=self.model_id, hub="hf", disable_update=True)
        if getattr(self.model, "model", None) is None:
            raise RuntimeError(f"funasr.AutoModel({self.model_id!r}) built no model")

    def embed(self, waves, sr=16000):
        rows = []
        for w in waves:
            r = self.model.generate(_resample(w, sr, 16000), granularity="utterance", extract_embedding=True)
            rows.append(np.asarray(r[0]["feats"]).reshape(-1))
        return l2norm(np.asarray(rows))


# ------------------------------------------------------------------------- clinical / music
@register("labeler", "coughkit")
@paper_backend("coughkit")
class CoughKitLabeler:
    """CoughKit XGBoost cough classifier over energy-segmented sub-windows (threshold 0.8)."""
    name = "coughkit"
    model_id = "bagustris/coughkit (XGBoost)"

    def __init__(self, threshold: float = 0.8):
        ck = require("coughkit", "coughkit", "labeler 'coughkit'")
        self.ck, self.threshold = ck, threshold
        self.clf, self.scaler = ck.load_cough_classifier(), ck.load_scaler()

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        from harp_lib.core.labels import cough_label
        w = _resample(wave, sr, 16000)
        probs = [float(self.ck.classify_cough(seg, 16000, self.clf, self.scaler))
                 for seg in self.ck.segment_cough(w, 16000)[0]]
        n = sum(p >= self.threshold for p in probs)
        return {"primary": cough_label(n), "cough_count": n, "max_cough_prob": max(probs, default=0.0)}


@register("labeler", "music_aesthetics")
@paper_backend("music_aesthetics")
class MusicAestheticsLabeler:
    """laion/music-whisper encoder + laion/music-aesthetics heads (HARP_REFERENCE §2.3):
    30 s centre crop/pad -> (1500, 768) -> 10 blocks x (mean, max, min) = 23040 -> 1024 -> 256
    -> five 256 -> 64 -> 1 heads (raw 1-5); overall = mean; tier High/Mid/Low."""
    name = "music_aesthetics"
    model_id = "laion/music-whisper + laion/music-aesthetics"
    METRICS = ("Naturalness", "Clarity", "Musicality", "Coherence", "Memorability")

    def __init__(self):
        torch = require("torch", "music_aesthetics", "labeler 'music_aesthetics'")
        tr = require("transformers", "music_aesthetics", "labeler 'music_aesthetics'")
        hub = require("huggingface_hub", "music_aesthetics", "labeler 'music_aesthetics'")
        nn = torch.nn
        self.encoder = tr.WhisperModel.from_pretrained("laion/music-whisper").get_encoder().eval()
        self.fe = tr.WhisperFeatureExtractor.from_pretrained("laion/music-whisper")
        self.bottleneck = nn.Sequential(nn.Linear(23040, 1024), nn.ReLU(), nn.Dropout(0.3),
                                        nn.Linear(1024, 256), nn.ReLU(), nn.LayerNorm(256))
        self.heads = nn.ModuleDict({m: nn.Sequential(nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 1))
                                    for m in self.METRICS})
        get = lambda f: hub.hf_hub_download("laion/music-aesthetics", f)  # noqa: E731
        self.bottleneck.load_state_dict(torch.load(get("stage1_bottleneck.pt"), map_location="cpu", weights_only=True))
        for m in self.METRICS:
            self.heads[m].load_state_dict(torch.load(get(f"expert_{m}.pt"), map_location="cpu", weights_only=True))
        self.bottleneck.eval(), self.heads.eval()
        self.torch = torch

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        from harp_lib.core.labels import tier_of
        w = _resample(wave, sr, 16000)
        n = 30 * 16000
        w = w[(len(w) - n) // 2:(len(w) - n) // 2 + n] if len(w) > n else np.pad(w, ((n - len(w)) // 2, n - len(w) - (n - len(w)) // 2))
        feats = self.fe(w, sampling_rate=16000, return_tensors="pt").input_features
        with self.torch.inference_mode():
            h = self.encoder(feats).last_hidden_state[0].view(10, 150, -1)
            x = self.torch.cat([h.mean(1), h.amax(1), h.amin(1)], -1).reshape(1, -1)
            z = self.bottleneck(x)
            scores = {m: round(float(self.heads[m](z)[0, 0]), 3) for m in self.METRICS}
        overall = round(float(np.mean(list(scores.values()))), 3)
        return {"primary": tier_of(overall), "scores": scores, "overall": overall}
