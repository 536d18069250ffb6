"""A QDQ-quantised ONNX network evaluated exactly: the same bytes on every CPU.

Why: onnxruntime's MLAS picks its int8 kernels from CPUID.  On YAMNet's int8 graph (the sound
event labeler) an AVX2 host gives other uint8 scores than an SSE4.2 or AVX-512 VNNI one (up to
25 grid steps; docs/testing.md "Cross-machine bytes"), so a labeler's output depended on the
machine.

How: a quantised ``Conv`` or ``Gemm`` is a sum of products of small integers (uint8 activations
minus their zero point, int8 weights), rescaled once.  Every product is below 2^16 in magnitude
and every partial sum of a layer here below 2^30, so float64 arithmetic represents each one
exactly and the BLAS matmul gives the exact integer sum whatever its kernel, summation order,
FMA use or thread count.  The rescale (``sum * s_x * s_w + bias``), ``Relu`` and the
quantisation (``round-half-even(y / s_y) + zp``, clipped) are elementwise IEEE float64
operations, correctly rounded on every x86-64.  So the output is a function of the weights and
the input only.  It follows the ONNX operators' definitions (weights quantised in float32 as
``QuantizeLinear`` does; the ops that run between a ``DequantizeLinear`` and the next
``QuantizeLinear`` in float64 instead of float32), so an output byte can differ from
onnxruntime's where a value lies within float32 rounding of a quantisation boundary
(measured on YAMNet: docs/testing.md).

The reader is a minimal protobuf decoder for ``ModelProto`` (nodes, initialisers, external
data); no ``onnx`` package is needed.  Supported operators: ``QuantizeLinear``,
``DequantizeLinear``, ``Conv`` (group 1, or depthwise), ``Relu``, ``GlobalAveragePool``,
``Reshape``, ``Gemm``; any other one raises :class:`~harp_lib.config.BackendError` naming it.

>>> _varint(bytes([0x96, 0x01]), 0)
(150, 2)
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

from harp_lib.config import BackendError

__all__ = ["OnnxNode", "read_onnx", "QdqNet"]

# TensorProto.DataType -> numpy
_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 11: np.float64}
_RANGE = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


# ------------------------------------------------------------------ protobuf wire format
def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, object]]:
    """``(field number, wire type, value)`` of one message: an int, or bytes when length-delimited."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        else:
            raise BackendError(f"ONNX file: protobuf wire type {wire} (field {num}) is not supported")
        yield num, wire, value


def _ints(wire: int, value) -> list[int]:
    """A repeated int64 field's values: one varint, or a packed run of them."""
    if wire == 0:
        return [value - (1 << 64) if value >= 1 << 63 else value]
    out, i = [], 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return out


@dataclass
class OnnxNode:
    op: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)


def _attribute(buf: bytes) -> tuple[str, object]:
    name, ints, value = "", [], None
    for num, wire, v in _fields(buf):
        if num == 1:
            name = v.decode()
        elif num == 2:
            value = struct.unpack("<f", v)[0]
        elif num == 3:
            value = _ints(0, v)[0]
        elif num == 8:
            ints += _ints(wire, v)
    return name, (ints if value is None else value)


def _node(buf: bytes) -> OnnxNode:
    node = OnnxNode("")
    for num, wire, v in _fields(buf):
        if num == 1:
            node.inputs.append(v.decode())
        elif num == 2:
            node.outputs.append(v.decode())
        elif num == 4:
            node.op = v.decode()
        elif num == 5:
            key, value = _attribute(v)
            node.attrs[key] = value
    return node


def _tensor(buf: bytes, folder: Path) -> tuple[str, np.ndarray]:
    dims, dtype, name, raw, external, typed = [], None, "", None, {}, []
    for num, wire, v in _fields(buf):
        if num == 1:
            dims += _ints(wire, v)
        elif num == 2:
            dtype = v
        elif num == 8:
            name = v.decode()
        elif num == 9:
            raw = v
        elif num == 13:
            entry = {k: w for k, _, w in _fields(v)}
            external[entry[1].decode()] = entry[2].decode()
        elif num in (4, 5, 7):          # float_data / int32_data / int64_data
            typed.append((num, wire, v))
    if dtype not in _DTYPES:
        raise BackendError(f"ONNX file: tensor {name!r} has data type {dtype}, not supported")
    np_dtype = np.dtype(_DTYPES[dtype]).newbyteorder("<")
    if external:
        with open(folder / external["location"], "rb") as f:
            f.seek(int(external.get("offset", 0)))
            raw = f.read(int(external["length"])) if "length" in external else f.read()
    if raw is not None:
        array = np.frombuffer(raw, dtype=np_dtype).astype(np_dtype.newbyteorder("="))
    else:
        values = []
        for num, wire, v in typed:
            values += (list(struct.unpack(f"<{len(v) // 4}f", v)) if num == 4 and wire == 2
                       else struct.unpack("<f", v) if num == 4 else _ints(wire, v))
        array = np.asarray(values).astype(np_dtype.newbyteorder("="))
    return name, array.reshape(dims)


def read_onnx(path) -> tuple[list[OnnxNode], dict[str, np.ndarray], list[str], list[str]]:
    """``(nodes, initialisers, graph input names, graph output names)`` of an ONNX file
    (external data read from beside it)."""
    path = Path(path)
    graph = next((v for num, _, v in _fields(path.read_bytes()) if num == 7), None)
    if graph is None:
        raise BackendError(f"{path}: not an ONNX model (no graph)")
    nodes, inits, inputs, outputs = [], {}, [], []
    for num, _, v in _fields(graph):
        if num == 1:
            nodes.append(_node(v))
        elif num == 5:
            name, array = _tensor(v, path.parent)
            inits[name] = array
        elif num in (11, 12):
            (inputs if num == 11 else outputs).append(next(w.decode() for k, _, w in _fields(v) if k == 1))
    return nodes, inits, [i for i in inputs if i not in inits], outputs


# ------------------------------------------------------------------ exact evaluation
@dataclass
class _Quant:
    """A quantised tensor: integer ``q`` (float64, exact) with its ``scale`` and ``zero`` point;
    ``axis`` is the channel axis of a per-channel scale."""
    q: np.ndarray
    scale: np.ndarray
    zero: np.ndarray
    axis: Optional[int] = None

    def centred(self) -> np.ndarray:
        return self.q - self._along(self.zero)

    def real(self) -> np.ndarray:
        return self.centred() * self._along(self.scale)

    def _along(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float64)
        if v.ndim == 0 or self.axis is None:
            return v
        shape = [1] * self.q.ndim
        shape[self.axis] = -1
        return v.reshape(shape)


def _quantize_linear(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, axis: Optional[int], exact32: bool):
    """ONNX ``QuantizeLinear``: ``saturate(round_half_even(x / scale) + zero)``; a float32
    initialiser is divided in float32 (the operator's own type), an activation in float64."""
    dtype = zero.dtype
    lo, hi = _RANGE[dtype]
    shape = [1] * x.ndim
    if axis is not None and np.ndim(scale):
        shape[axis] = -1
    s = np.asarray(scale).reshape(shape) if np.ndim(scale) else np.asarray(scale)
    z = np.asarray(zero, np.float64).reshape(shape) if np.ndim(zero) else np.float64(zero)
    if exact32:
        y = np.rint(np.asarray(x, np.float32) / s.astype(np.float32)).astype(np.float64)
    else:
        y = np.rint(np.asarray(x, np.float64) / s.astype(np.float64))
    return np.clip(y + z, lo, hi)


def _conv(x: np.ndarray, w: np.ndarray, group: int, stride, pads) -> np.ndarray:
    """Integer-valued convolution in float64 (exact): ``x`` NHWC, ``w`` (Cout, Cin/group, kh, kw)."""
    cout, cin_g, kh, kw = w.shape
    n, h, wd, cin = x.shape
    sh, sw = stride
    xp = np.pad(x, ((0, 0), (pads[0], pads[2]), (pads[1], pads[3]), (0, 0)))
    ho, wo = (h + pads[0] + pads[2] - kh) // sh + 1, (wd + pads[1] + pads[3] - kw) // sw + 1
    taps = [xp[:, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw, :] for i in range(kh) for j in range(kw)]
    if group == 1:
        cols = np.concatenate(taps, axis=-1) if len(taps) > 1 else taps[0]
        kernel = w.transpose(2, 3, 1, 0).reshape(kh * kw * cin_g, cout)     # (tap, cin) rows
        return (cols.reshape(-1, cols.shape[-1]) @ kernel).reshape(n, ho, wo, cout)
    if group == cin == cout and cin_g == 1:
        kernel = w.reshape(cout, kh * kw)
        out = np.zeros((n, ho, wo, cout))
        for t, tap in enumerate(taps):
            out += tap * kernel[:, t]
        return out
    raise BackendError(f"QdqNet: Conv with group {group} over {cin} channels is not supported")


class QdqNet:
    """An ONNX QDQ network run exactly (module doc): ``net(x) -> output`` for the quantised graph
    input ``x`` (batch first; each output row depends on its own input row only)."""

    def __init__(self, path):
        self.nodes, self.inits, inputs, outputs = read_onnx(path)
        if len(inputs) != 1 or len(outputs) != 1:
            raise BackendError(f"QdqNet: {path} has inputs {inputs} and outputs {outputs}; one of each expected")
        self.input, self.output = inputs[0], outputs[0]
        unknown = sorted({n.op for n in self.nodes} - set(self._OPS))
        if unknown:
            raise BackendError(f"QdqNet: {path} uses operator(s) {unknown}, not supported")
        self._const: dict[str, object] = {}          # what the initialisers alone give (weights' grids)
        self._run(self._const, constants_only=True)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        values = dict(self._const, **{self.input: np.asarray(x)})
        self._run(values)
        out = values[self.output]
        return out.q.astype(out.zero.dtype) if isinstance(out, _Quant) else out

    def _run(self, values: dict, constants_only: bool = False) -> None:
        for node in self.nodes:
            if node.outputs[0] in values:
                continue
            if constants_only and not all(n in self.inits or n in values for n in node.inputs):
                continue
            args = [self._value(values, name) for name in node.inputs]
            values[node.outputs[0]] = self._OPS[node.op](self, node, *args)

    def _value(self, values, name):
        if name in values:
            return values[name]
        if name in self.inits:
            return self.inits[name]
        raise BackendError(f"QdqNet: tensor {name!r} is used before it is computed")

    # -- operators: each returns a _Quant (integers with a scale) or a float64 array
    def _quantize(self, node, x, scale, zero=None):
        zero = np.zeros((), np.uint8) if zero is None else zero
        axis = node.attrs.get("axis", 1) if np.ndim(scale) else None
        exact32 = not isinstance(x, _Quant) and x.dtype == np.float32        # an initialiser
        real = x.real() if isinstance(x, _Quant) else x
        if axis is not None and axis < 0:
            axis += real.ndim
        return _Quant(_quantize_linear(real, scale, zero, axis, exact32), scale, zero, axis)

    def _dequantize(self, node, x, scale, zero=None):
        if isinstance(x, _Quant):               # DequantizeLinear(QuantizeLinear(w)): same grid
            return _Quant(x.q, scale, x.zero if zero is None else zero, x.axis)
        zero = np.zeros((), x.dtype) if zero is None else zero
        axis = node.attrs.get("axis", 1) if np.ndim(scale) else None
        return _Quant(np.asarray(x, np.float64), scale, zero, axis)

    def _conv_op(self, node, x: _Quant, w: _Quant, bias=None):
        if not (isinstance(x, _Quant) and isinstance(w, _Quant)):
            raise BackendError("QdqNet: Conv needs dequantised input and weights")
        if tuple(node.attrs.get("dilations", (1, 1))) != (1, 1):
            raise BackendError("QdqNet: dilated Conv is not supported")
        if x.axis is not None:
            raise BackendError("QdqNet: Conv input with a per-channel scale is not supported")
        acc = _conv(np.moveaxis(x.centred(), 1, -1), w.centred(), int(node.attrs.get("group", 1)),
                    node.attrs.get("strides", (1, 1)), node.attrs.get("pads", (0, 0, 0, 0)))
        y = acc * (np.float64(x.scale) * np.asarray(w.scale, np.float64))
        if bias is not None:
            y = y + np.asarray(bias, np.float64)
        return np.moveaxis(y, -1, 1)

    def _relu(self, node, x):
        return np.maximum(x.real() if isinstance(x, _Quant) else x, 0.0)

    def _global_average_pool(self, node, x):
        if not isinstance(x, _Quant) or x.axis is not None:
            raise BackendError("QdqNet: GlobalAveragePool needs a dequantised per-tensor input")
        c = x.centred()
        sums = c.reshape(c.shape[0], c.shape[1], -1).sum(axis=-1)           # exact integer sums
        return (sums / c[0, 0].size * np.float64(x.scale)).reshape(c.shape[:2] + (1,) * (c.ndim - 2))

    def _reshape(self, node, x, shape):
        shape = [int(s) for s in np.asarray(shape)]
        if isinstance(x, _Quant):
            if x.axis is not None:
                raise BackendError("QdqNet: Reshape of a per-channel tensor is not supported")
            return _Quant(self._reshaped(x.q, shape), x.scale, x.zero)
        return self._reshaped(x, shape)

    @staticmethod
    def _reshaped(a, shape):
        """``a`` reshaped row by row: the graph is exported for one input (a leading 1 is the
        batch), and a batch of inputs keeps its first axis."""
        shape = [a.shape[i] if s == 0 else s for i, s in enumerate(shape)]
        if not shape or shape[0] not in (1, a.shape[0]):
            raise BackendError(f"QdqNet: Reshape to {shape} mixes inputs of a batch")
        return a.reshape([a.shape[0]] + shape[1:])

    def _gemm(self, node, a: _Quant, b: _Quant, c=None):
        if not (isinstance(a, _Quant) and isinstance(b, _Quant)) or a.axis is not None:
            raise BackendError("QdqNet: Gemm needs a per-tensor dequantised input and dequantised weights")
        if node.attrs.get("transA", 0) or node.attrs.get("alpha", 1.0) != 1.0 or node.attrs.get("beta", 1.0) != 1.0:
            raise BackendError("QdqNet: Gemm with transA, alpha or beta is not supported")
        trans = bool(node.attrs.get("transB", 0))
        scale = np.asarray(b.scale, np.float64)
        if np.ndim(scale) and b.axis != (0 if trans else 1):
            raise BackendError("QdqNet: Gemm weights quantised along their input axis are not supported")
        y = (a.centred() @ (b.centred().T if trans else b.centred())) * (np.float64(a.scale) * scale)
        return y + np.asarray(c, np.float64) if c is not None else y

    _OPS = {"QuantizeLinear": _quantize, "DequantizeLinear": _dequantize, "Conv": _conv_op, "Relu": _relu,
            "GlobalAveragePool": _global_average_pool, "Reshape": _reshape, "Gemm": _gemm}
