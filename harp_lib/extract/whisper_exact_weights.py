"""Weights of the exact Whisper engine (:mod:`harp_lib.extract.whisper_exact`): the variables of a
CTranslate2 ``model.bin`` (:func:`read_ct2`) and the Silero VAD v6 parameters of the ``silero-vad``
wheel, as float64 numpy arrays.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

__all__ = ["read_ct2", "silero_weights_path"]

# CTranslate2 DataType -> numpy dtype (ctranslate2/types.h)
_CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


# ------------------------------------------------------------------ weights
def read_ct2(path: Path) -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 ``model.bin`` (format version 5-6), aliases resolved.

    int8 weights stored with a ``weight_scale`` are returned dequantised (float32)."""
    buf = Path(path).read_bytes()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return vals

    def text():
        nonlocal pos
        (n,) = take("<H")
        s = buf[pos:pos + n - 1].decode()
        pos += n
        return s

    (version,) = take("<I")
    if version < 5:
        raise ValueError(f"{path}: CTranslate2 model format {version}; expected >= 5")
    text()                                   # spec name
    take("<I")                               # spec revision
    (n_vars,) = take("<I")
    out: dict[str, np.ndarray] = {}
    for _ in range(n_vars):
        name = text()
        (rank,) = take("<B")
        dims = take("<" + "I" * rank)
        (dtype,) = take("<B")
        (nbytes,) = take("<I")
        if dtype not in _CT2_DTYPES:
            raise ValueError(f"{path}: variable {name} has CTranslate2 dtype {dtype} (not supported)")
        out[name] = np.frombuffer(buf, _CT2_DTYPES[dtype], nbytes // np.dtype(_CT2_DTYPES[dtype]).itemsize,
                                  pos).reshape(dims)
        pos += nbytes
    if pos < len(buf):
        (n_alias,) = take("<I")
        for _ in range(n_alias):
            alias, target = text(), text()
            out[alias] = out[target]
    for name in [n for n in out if n.endswith("/weight_scale")]:
        w = name[: -len("_scale")]
        if out[w].dtype == np.int8:
            out[w] = out[w].astype(np.float32) / out[name].astype(np.float32).reshape(-1, 1)
    return out


def silero_weights_path() -> Path:
    """Silero VAD v6 (16 kHz) as TorchScript, from the ``silero-vad`` wheel (its safetensors
    file holds other, older weights)."""
    import silero_vad  # heavy: silero_vad (torch)
    return Path(silero_vad.__file__).parent / "data" / "silero_vad.jit"


def _silero_weights(path: Path) -> dict[str, np.ndarray]:
    """The 16 kHz network's parameters, named as :class:`SileroF64` uses them."""
    import torch  # heavy: torch (~1.2 s)
    m = torch.jit.load(str(path), map_location="cpu")._model
    w = {"stft_conv.weight": m.stft.forward_basis_buffer}
    for i in range(4):
        conv = getattr(m.encoder, str(i)).reparam_conv
        w[f"conv{i + 1}.weight"], w[f"conv{i + 1}.bias"] = conv.weight, conv.bias
    for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        w[f"lstm_cell.{k}"] = getattr(m.decoder.rnn, k)
    w["final_conv.weight"], w["final_conv.bias"] = getattr(m.decoder.decoder, "2").weight, getattr(m.decoder.decoder, "2").bias
    return {k: v.detach().numpy().astype(np.float64) for k, v in w.items()}
