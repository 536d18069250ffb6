"""Whisper in float64 torch with every decision on the grid (:class:`ExactWhisper`): encoder,
greedy decoder with OpenAI's logit filters, and cross-attention DTW word alignment
(:func:`dtw_path`), behind the subset of ``ctranslate2.models.Whisper``'s interface that
faster-whisper calls.  Why and how: :mod:`harp_lib.extract.whisper_exact`.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Optional, Sequence

import numpy as np
import tokenizers

from harp_lib.extract.whisper_exact_grid import canon
from harp_lib.extract.whisper_exact_weights import read_ct2

__all__ = ["ExactWhisper", "dtw_path"]


# ------------------------------------------------------------------ Whisper
def dtw_path(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Monotonic alignment of ``cost`` (N text rows x M frames), OpenAI Whisper's ``dtw_cpu``
    (ties: diagonal, then up, then left as written there); exact on grid values."""
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    trace = np.zeros((n + 1, m + 1), dtype=np.int8)
    rows = cost.tolist()
    for i in range(1, n + 1):
        prev, cur, row = acc[i - 1].tolist(), acc[i].tolist(), rows[i - 1]
        tr = [0] * (m + 1)
        for j in range(1, m + 1):
            c0, c1, c2 = prev[j - 1], prev[j], cur[j - 1]
            if c0 < c1 and c0 < c2:
                c, t = c0, 0
            elif c1 < c0 and c1 < c2:
                c, t = c1, 1
            else:
                c, t = c2, 2
            cur[j] = row[j - 1] + c
            tr[j] = t
        acc[i] = cur
        trace[i] = tr
    trace[0, :], trace[:, 0] = 2, 1
    i, j, path = n, m, []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        t = trace[i, j]
        if t == 0:
            i, j = i - 1, j - 1
        elif t == 1:
            i -= 1
        else:
            j -= 1
    path = np.array(path[::-1]).T
    return path[0], path[1]


def _median_filter(x: np.ndarray, width: int) -> np.ndarray:
    """Median over the last axis, reflect-padded (OpenAI Whisper's ``median_filter``)."""
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    xp = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode="reflect")
    win = np.lib.stride_tricks.sliding_window_view(xp, width, axis=-1)
    return np.sort(win, axis=-1)[..., pad]


class _Encoded:
    """An encoder output and, once computed, each decoder layer's cross-attention keys/values."""

    def __init__(self, x):
        self.x, self.cross = x, None
        self.shape = tuple(x.shape)


class ExactWhisper:
    """Whisper (the CTranslate2 folder's weights) in float64 torch, with the subset of
    ``ctranslate2.models.Whisper``'s interface faster-whisper calls (encode, generate, align)."""
    device, device_index = "cpu", [0]

    def __init__(self, model_path, threads: int = 1):
        import torch  # heavy: torch (~1.2 s)
        path = Path(model_path)
        raw = read_ct2(path / "model.bin")
        cfg = json.loads((path / "config.json").read_text())
        self.torch, self.threads = torch, int(threads)
        self.w = {k: torch.from_numpy(np.asarray(v, dtype=np.float64).copy()) for k, v in raw.items()
                  if v.dtype.kind == "f" and v.ndim > 0}
        self.heads_enc = int(raw["encoder/num_heads"])
        self.heads_dec = int(raw["decoder/num_heads"])
        self.n_enc = sum(1 for k in raw if k.startswith("encoder/layer_") and k.endswith("ffn/linear_0/weight"))
        self.n_dec = sum(1 for k in raw if k.startswith("decoder/layer_") and k.endswith("ffn/linear_0/weight"))
        self.alignment_heads = [tuple(h) for h in cfg["alignment_heads"]]
        self.n_mels = int(self.w["encoder/conv1/weight"].shape[1])
        vocab = int(self.w["decoder/embeddings/weight"].shape[0])
        self.is_multilingual = vocab >= 51865
        tok = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
        tid = tok.token_to_id
        self.eot, self.sot = tid("<|endoftext|>"), tid("<|startoftranscript|>")
        self.no_timestamps = tid("<|notimestamps|>")
        self.timestamp_begin = self.no_timestamps + 1
        self.no_speech = tid("<|nospeech|>") if tid("<|nospeech|>") is not None else tid("<|nocaptions|>")
        self.blank = tok.encode(" ", add_special_tokens=False).ids

    # -------------------------------------------------------------- layers
    @contextmanager
    def _threads(self):
        t = self.torch
        old = t.get_num_threads()
        t.set_num_threads(self.threads)
        try:
            with t.inference_mode():
                yield
        finally:
            t.set_num_threads(old)

    def _lin(self, x, name):
        b = self.w.get(name + "/bias")
        y = x @ self.w[name + "/weight"].T
        return y if b is None else y + b

    def _ln(self, x, name):
        return self.torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[name + "/gamma"],
                                                   self.w[name + "/beta"], 1e-5)

    def _attend(self, q, k, v, heads, causal_from: Optional[int] = None, want_qk: bool = False):
        """Multi-head attention of ``q`` (T, D) over ``k``, ``v`` (S, D); ``causal_from``: the
        absolute position of q's first row (self-attention with a cache)."""
        T, D = q.shape
        d = D // heads
        qh = q.view(T, heads, d).transpose(0, 1)
        kh = k.view(-1, heads, d).transpose(0, 1)
        vh = v.view(-1, heads, d).transpose(0, 1)
        qk = (qh @ kh.transpose(1, 2)) * (d ** -0.5)
        if causal_from is not None and T > 1:
            S = k.shape[0]
            pos_q = self.torch.arange(causal_from, causal_from + T).view(T, 1)
            qk = qk.masked_fill(self.torch.arange(S).view(1, S) > pos_q, float("-inf"))
        out = (qk.softmax(-1) @ vh).transpose(0, 1).reshape(T, D)
        return (out, qk) if want_qk else (out, None)

    def _attend_all(self, q, k, v, heads):
        """Encoder self-attention (no mask): torch's fused kernel, 1.5x the explicit
        softmax(QK^T)V on 1500 frames; in float64 its result differs from the explicit one by
        ~1e-15, far below the grid every decision is taken on."""
        T, D = q.shape
        split = [t.view(T, heads, D // heads).transpose(0, 1)[None] for t in (q, k, v)]
        out = self.torch.nn.functional.scaled_dot_product_attention(*split)[0]
        return out.transpose(0, 1).reshape(T, D)

    def _encode(self, mel):
        F, w = self.torch.nn.functional, self.w
        x = F.gelu(F.conv1d(mel, w["encoder/conv1/weight"], w["encoder/conv1/bias"], padding=1))
        x = F.gelu(F.conv1d(x, w["encoder/conv2/weight"], w["encoder/conv2/bias"], stride=2, padding=1))
        x = x[0].T
        x = x + w["encoder/position_encodings/encodings"][: x.shape[0]]
        for i in range(self.n_enc):
            p = f"encoder/layer_{i}"
            h = self._ln(x, f"{p}/self_attention/layer_norm")
            q, k, v = self._lin(h, f"{p}/self_attention/linear_0").chunk(3, -1)
            x = x + self._lin(self._attend_all(q, k, v, self.heads_enc), f"{p}/self_attention/linear_1")
            h = self._ln(x, f"{p}/ffn/layer_norm")
            x = x + self._lin(F.gelu(self._lin(h, f"{p}/ffn/linear_0")), f"{p}/ffn/linear_1")
        return self._ln(x, "encoder/layer_norm")

    def _cross(self, enc: _Encoded):
        if enc.cross is None:
            enc.cross = [self._lin(enc.x, f"decoder/layer_{i}/attention/linear_1").chunk(2, -1)
                         for i in range(self.n_dec)]
        return enc.cross

    def _decode(self, tokens: Sequence[int], enc: _Encoded, cache: list, want_qk: bool = False):
        """Decoder over ``tokens`` following the ``cache``'d positions; returns the final
        hidden states (T, D) and, with ``want_qk``, each layer's cross-attention logits."""
        F, w, t = self.torch.nn.functional, self.w, self.torch
        start = cache[0][0].shape[0] if cache else 0
        ids = t.tensor(list(tokens), dtype=t.long)
        x = w["decoder/embeddings/weight"][ids] + w["decoder/position_encodings/encodings"][start: start + len(ids)]
        qks = []
        for i, (ck, cv) in enumerate(self._cross(enc)):
            p = f"decoder/layer_{i}"
            h = self._ln(x, f"{p}/self_attention/layer_norm")
            q, k, v = self._lin(h, f"{p}/self_attention/linear_0").chunk(3, -1)
            if len(cache) > i:
                k, v = t.cat([cache[i][0], k]), t.cat([cache[i][1], v])
                cache[i] = (k, v)
            else:
                cache.append((k, v))
            x = x + self._lin(self._attend(q, k, v, self.heads_dec, causal_from=start)[0],
                              f"{p}/self_attention/linear_1")
            h = self._ln(x, f"{p}/attention/layer_norm")
            out, qk = self._attend(self._lin(h, f"{p}/attention/linear_0"), ck, cv, self.heads_dec, want_qk=want_qk)
            qks.append(qk)
            x = x + self._lin(out, f"{p}/attention/linear_2")
            h = self._ln(x, f"{p}/ffn/layer_norm")
            x = x + self._lin(F.gelu(self._lin(h, f"{p}/ffn/linear_0")), f"{p}/ffn/linear_1")
        return self._ln(x, "decoder/layer_norm"), qks

    def _logits(self, h) -> np.ndarray:
        return (h @ self.w["decoder/embeddings/weight"].T).numpy()

    # -------------------------------------------------------------- ctranslate2 interface
    def encode(self, features, to_cpu: bool = False) -> _Encoded:
        """``features``: log-mel (1, n_mels, 3000) -> the encoder output (1500 frames)."""
        mel = np.asarray(features, dtype=np.float64)
        if mel.ndim == 2:
            mel = mel[None]
        with self._threads():
            return _Encoded(self._encode(self.torch.from_numpy(np.ascontiguousarray(mel))))

    def _mask(self, logits: np.ndarray, seq: list, first: bool, rules: dict) -> np.ndarray:
        """OpenAI's logit filters in order: suppress blank, suppress tokens, timestamp rules."""
        lg = logits.copy()
        if first and rules["suppress_blank"]:
            lg[self.blank + [self.eot]] = -np.inf
        if rules["suppress_tokens"]:
            lg[list(rules["suppress_tokens"])] = -np.inf
        n = rules["no_repeat_ngram_size"]
        if n and len(seq) >= n - 1:
            tail = tuple(seq[len(seq) - n + 1:]) if n > 1 else ()
            banned = {seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i:i + n - 1]) == tail}
            lg[list(banned)] = -np.inf
        if not rules["timestamps"]:
            return lg
        tb = self.timestamp_begin
        lg[self.no_timestamps] = -np.inf
        last_ts = len(seq) >= 1 and seq[-1] >= tb
        penult_ts = len(seq) < 2 or seq[-2] >= tb
        if last_ts:
            if penult_ts:
                lg[tb:] = -np.inf
            else:
                lg[: self.eot] = -np.inf
        stamps = [s for s in seq if s >= tb]
        if stamps:
            lg[tb: stamps[-1] + (0 if last_ts and not penult_ts else 1)] = -np.inf
        if first:
            lg[:tb] = -np.inf
            if rules["max_initial_timestamp_index"] is not None:
                lg[tb + rules["max_initial_timestamp_index"] + 1:] = -np.inf
        lp = _log_softmax(lg)
        ts_mass = canon(_logsumexp(lp[tb:]))
        if ts_mass > lp[:tb].max():
            lg[:tb] = -np.inf
        return lg

    def generate(self, encoder_output: _Encoded, prompts, *, max_length: int = 448, return_scores: bool = True,
                 return_no_speech_prob: bool = True, suppress_blank: bool = True, suppress_tokens=(-1,),
                 max_initial_timestamp_index: Optional[int] = 50, beam_size: int = 1, patience: float = 1.0,
                 length_penalty: float = 1.0, repetition_penalty: float = 1.0, no_repeat_ngram_size: int = 0,
                 **sampling):
        """Greedy decoding (the only mode: temperature 0, beam 1); one result per prompt."""
        if beam_size != 1 or sampling or repetition_penalty != 1.0:
            raise ValueError("the exact Whisper engine decodes greedily only (beam_size 1, temperature 0, "
                             "no repetition penalty)")
        rules = {"suppress_blank": suppress_blank, "no_repeat_ngram_size": int(no_repeat_ngram_size or 0),
                 "suppress_tokens": [s for s in (suppress_tokens or ()) if s >= 0],
                 "max_initial_timestamp_index": max_initial_timestamp_index}
        # align() runs start + no_timestamps + text + eot through the decoder: keep that in its positions
        limit = min(int(max_length), int(self.w["decoder/position_encodings/encodings"].shape[0]) - 2)
        results = []
        with self._threads():
            for prompt in prompts:
                prompt = list(prompt)
                rules["timestamps"] = self.no_timestamps not in prompt
                cache: list = []
                h, _ = self._decode(prompt, encoder_output, cache)
                no_speech = 0.0
                if return_no_speech_prob and self.sot in prompt:
                    lp = _log_softmax(self._logits(h[prompt.index(self.sot)]))
                    no_speech = float(canon(np.exp(lp[self.no_speech])))
                seq, total = [], 0.0
                logits = self._logits(h[-1])
                while True:
                    lp = canon(_log_softmax(self._mask(logits, seq, not seq, rules)))
                    tok = int(np.argmax(lp))           # ties: the lowest id
                    total += float(lp[tok])
                    if tok == self.eot or len(prompt) + len(seq) + 1 >= limit:
                        if tok != self.eot:
                            seq.append(tok)
                        break
                    seq.append(tok)
                    h, _ = self._decode([tok], encoder_output, cache)
                    logits = self._logits(h[-1])
                score = total / (len(seq) ** length_penalty) if seq else total
                results.append(SimpleNamespace(sequences_ids=[seq], scores=[score] if return_scores else [],
                                               no_speech_prob=no_speech))
        return results

    def align(self, encoder_output: _Encoded, start_sequence, text_tokens, num_frames: int,
              median_filter_width: int = 7):
        """Word-level alignment of each token list (OpenAI Whisper's ``find_alignment``)."""
        out = []
        with self._threads():
            for text in text_tokens:
                tokens = list(start_sequence) + [self.no_timestamps] + list(text) + [self.eot]
                h, qks = self._decode(tokens, encoder_output, [], want_qk=True)
                n0 = len(start_sequence)
                lg = self._logits(h[n0: n0 + len(text)])[:, : self.eot]
                probs = np.exp(lg - _logsumexp(lg, axis=-1, keepdims=True))
                token_probs = canon(probs[np.arange(len(text)), list(text)]) if len(text) else np.zeros(0)
                weights = np.stack([qks[layer][head].numpy() for layer, head in self.alignment_heads])
                weights = weights[:, :, : num_frames // 2]
                weights = np.exp(weights - _logsumexp(weights, axis=-1, keepdims=True))
                mean, std = weights.mean(-2, keepdims=True), weights.std(-2, keepdims=True)
                weights = _median_filter((weights - mean) / std, median_filter_width)
                matrix = canon(weights.mean(0)[n0:-1])
                ti, fi = dtw_path(-matrix)
                out.append(SimpleNamespace(alignments=list(zip(ti.tolist(), fi.tolist())),
                                           text_token_probs=token_probs.tolist()))
        return out


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):                 # a row of -inf: log(0) = -inf
        s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return s if keepdims else (np.squeeze(s, axis=axis) if axis is not None else s.reshape(()))


def _log_softmax(x):
    return x - _logsumexp(x, axis=-1, keepdims=True)
