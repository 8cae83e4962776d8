"""Post-training quantization: a float JAX model -> an int8 model built from the blocks.

quantize(fn, params, calibration_inputs):
  1. graph.build matches the traced model against the layers the blocks implement;
  2. the float program runs on every calibration input (one jit) and each layer's output
     range is recorded (min/max, widened to include 0);
  3. each layer gets TFLite's int8 scheme: asymmetric activations (scale = range / 255, zero
     point rounded), symmetric int8 weights (per output channel for conv and depthwise, per
     tensor for dense), int32 biases at input scale x weight scale, fixed-point multipliers
     from quantize_multiplier; pools and reshapes keep their input's scale and zero point,
     softmax outputs scale 1/256 and zero point -128, relu becomes the clamp at the zero point;
     with weight_bits=4, conv, depthwise and dense weights int4 (packed); an LSTM written with
     lax.scan TFLite's integer LSTM (_lstm: its cell state int16, calibrated inside the scan);
     with activation_bits=16 TFLite's 16x8 scheme: activations symmetric int16 (scale =
     max|range| / 32767, zero point 0), biases int64 (carried as blocks.bias_words), softmax,
     sigmoid and tanh TFLite's int16 ones (output scale 1/32768 and 2^-15, zero point 0), leaky
     relu its int16 form.
The result is a plain JAX function of int8 (int16) inputs and int8/int32 parameters.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from specializer.quant import activations, activations_s16, blocks, lstm_scan, scan_unroll
from specializer.quant import lstm as lstm_block
from specializer.quant.fixedpoint import quantize_multiplier
from specializer.quant.graph import Graph, Layer, QuantizeError, ScanToUnroll, build, evaluate
from specializer.quant.params import (AddParams, ConvParams, DepthwiseParams, FullyConnectedParams, LstmParams,
                                      MeanParams, MulParams, PoolParams, SoftmaxParams, SoftmaxS16Params, SubParams,
                                      TransposeConvParams, int_range)

SOFTMAX_INTEGER_BITS = 5  # TFLite's kScaledDiffIntegerBits
# activation kind -> (its parameters from the scales, its int8 block): quant/activations.py
ACTIVATIONS = {"logistic": (activations.logistic_params, activations.logistic),
               "tanh": (activations.tanh_params, activations.tanh),
               "leaky_relu": (activations.leaky_relu_params, activations.leaky_relu),
               "hard_swish": (activations.hard_swish_params, activations.hard_swish)}
# ... and the two with an int16 block (quant/activations_s16.py)
ACTIVATIONS_S16 = {"logistic": (activations_s16.logistic_params, activations_s16.logistic),
                   "tanh": (activations_s16.tanh_params, activations_s16.tanh)}
ADD_LEFT_SHIFT = 20       # TFLite's int8 add


@dataclass(frozen=True)
class QParams:
    """real = scale * (q - zero_point); q int8, or int16 with bits 16."""
    scale: float
    zero_point: int
    bits: int = 8

    def quantize(self, x) -> np.ndarray:
        """Host-side, TFLite's Quantize: round halves away from zero, saturate."""
        v = np.asarray(x, np.float64) / self.scale
        q = np.sign(v) * np.floor(np.abs(v) + 0.5) + self.zero_point
        return np.clip(q, *int_range(self.bits)).astype(np.int16 if self.bits == 16 else np.int8)

    def dequantize(self, q) -> np.ndarray:
        return ((np.asarray(q, np.int32) - self.zero_point) * self.scale).astype(np.float32)


# the output quantization TFLite's int8 LOGISTIC and TANH write, whatever the calibration saw
FIXED_OUTPUT = {"logistic": QParams(*activations.LOGISTIC_OUT), "tanh": QParams(*activations.TANH_OUT)}


def softmax_params(input_scale: float, num_rows: int, row_size: int, beta: float = 1.0,
                   output_bits: int = 8) -> SoftmaxParams:
    """TFLite's PreprocessSoftmaxScaling and CalculateInputRadius for int8 input (output_bits 16:
    the int16 output TFLite's int8 softmax can write)."""
    real = min(beta * input_scale * (1 << (31 - SOFTMAX_INTEGER_BITS)), (1 << 31) - 1.0)
    mult, shift = quantize_multiplier(real)
    if shift < 0:
        raise QuantizeError(f"quantize: softmax input scale {input_scale} is too small (multiplier {real} < 1)")
    radius = math.floor(((1 << SOFTMAX_INTEGER_BITS) - 1) * (1 << (31 - SOFTMAX_INTEGER_BITS)) / (1 << shift))
    return SoftmaxParams(num_rows=num_rows, row_size=row_size, mult=mult, shift=shift, diff_min=-radius,
                         output_bits=output_bits)


def softmax_s16_params(input_scale: float, num_rows: int, row_size: int, beta: float = 1.0) -> SoftmaxS16Params:
    """TFLite's int16 softmax scaling: double(input scale) * double(beta) / (10 / 65535), so that
    a difference of -65535 from the row's maximum is -10 (the exp table's range)."""
    try:
        mult, shift = quantize_multiplier(float(np.float64(input_scale) * np.float64(beta) / (10.0 / 65535.0)))
        return SoftmaxS16Params(num_rows=num_rows, row_size=row_size, mult=mult, shift=shift)
    except ValueError as e:
        raise QuantizeError(f"quantize: int16 softmax with input scale {input_scale}, beta {beta}: {e}") from None


def activation_qparams(lo: float, hi: float, bits: int = 8) -> QParams:
    """TFLite's asymmetric int8 from a float range (widened to hold 0 exactly); bits 16: its
    symmetric int16 (the 16x8 scheme), scale max(|lo|, |hi|) / 32767, zero point 0."""
    if bits == 16:
        top = max(abs(float(lo)), abs(float(hi)))
        return QParams(top / 32767.0 if top > 0 else 1.0, 0, 16)
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi == lo:
        return QParams(1.0, -128)
    scale = (hi - lo) / 255.0
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return QParams(scale, zp)


@dataclass(frozen=True)
class Step:
    """One int8 block call: kind, block params, input layer indices, weight/bias names."""
    kind: str
    block: object
    ins: tuple[int, ...]
    weight: str | None = None
    bias: str | None = None
    arrays: tuple[str, ...] = ()  # a block of more arrays than a weight and a bias (an LSTM's 12)


class QuantizedModel:
    """The int8 model: call it with int8 inputs and the int8/int32 params (by name or in
    signature order); `inputs`/`outputs` give the QParams to quantize inputs and dequantize
    outputs; `steps` lists each block with its static parameters."""

    def __init__(self, name, input_names, inputs, outputs, steps, out_index, param_names, step_qparams=(),
                 graph: Graph | None = None):
        self.__name__ = self.__qualname__ = name
        self.inputs: dict[str, QParams] = dict(zip(input_names, inputs))
        self.outputs: tuple[QParams, ...] = tuple(outputs)
        self.steps: tuple[Step, ...] = tuple(steps)
        self.step_qparams: tuple[QParams, ...] = tuple(step_qparams)  # each step's output quantization
        self.graph = graph  # the float model's layers (the steps are its non-input layers, in order)
        self._out_index = out_index
        self._float_view = None  # run_float's compiled program
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in list(input_names) + param_names])

    def __call__(self, *args, **kwargs):
        vals = self.values(*args, **kwargs)
        outs = tuple(vals[i] for i in self._out_index)
        return outs[0] if len(outs) == 1 else outs

    def values(self, *args, **kwargs) -> list:
        """The inputs, then every step's output (each step inside its named scope, `scope(k)`)."""
        bound = self.__signature__.bind(*args, **kwargs).arguments
        vals = [bound[n] for n in self.inputs]
        for k, s in enumerate(self.steps):
            x = [vals[i] for i in s.ins]
            w = tuple(bound[n] for n in s.arrays) if s.arrays else bound[s.weight] if s.weight else None
            b = bound[s.bias] if s.bias else None
            with jax.named_scope(self.scope(k)):
                vals.append(_run(s, x, w, b))
        return vals

    def scope(self, k: int) -> str:
        """The named scope step k runs in: in the op_name of every HLO instruction it becomes."""
        return f"layer{k}.{self.steps[k].kind}"

    def run_float(self, params: dict, **float_inputs):
        """Quantize float inputs, run the int8 model, dequantize: the float view of it."""
        q = {n: jnp.asarray(self.inputs[n].quantize(float_inputs[n])) for n in self.inputs}
        if self._float_view is None:  # compiled once (op by op, each call compiles its primitives again)
            self._float_view = jax.jit(lambda q, p: self(**q, **p))
        with blocks.values_only():  # its values are all it gives
            outs = self._float_view(q, dict(params))
        outs = outs if isinstance(outs, tuple) else (outs,)
        deq = tuple(qp.dequantize(o) for qp, o in zip(self.outputs, outs))
        return deq[0] if len(deq) == 1 else deq


def _run(s: Step, x, w, b):
    if s.kind == "const":
        return w
    if s.kind == "conv":
        return blocks.conv2d(x[0], w, b, s.block)
    if s.kind == "depthwise":
        return blocks.depthwise_conv2d(x[0], w, b, s.block)
    if s.kind == "tconv":
        return blocks.transpose_conv2d(x[0], w, b, s.block)
    if s.kind == "dense":
        return blocks.fully_connected(x[0], w, b, s.block)
    if s.kind == "maxpool":
        return blocks.max_pool(x[0], s.block)
    if s.kind == "avgpool":
        return blocks.avg_pool(x[0], s.block)
    if s.kind == "gap":
        y = blocks.avg_pool(x[0], s.block)
        return y.reshape(y.shape[0], y.shape[3])
    if s.kind == "add":
        return blocks.add(x[0], x[1], s.block)
    if s.kind == "sub":
        return blocks.sub(x[0], x[1], s.block)
    if s.kind == "mul":
        return blocks.mul(x[0], x[1], s.block)
    if s.kind == "softmax":
        if isinstance(s.block, SoftmaxS16Params):
            return blocks.softmax_s16(x[0], s.block)
        return blocks.softmax(x[0], s.block)
    if s.kind == "reshape":
        return x[0].reshape(s.block)
    if s.kind == "mean":
        return blocks.mean(x[0], s.block)
    if s.kind == "pad":
        widths, zero_point = s.block  # TFLite's PAD: the output's (= the input's) zero point
        return jnp.pad(x[0], widths, constant_values=jnp.array(zero_point, x[0].dtype))
    if s.kind == "transpose":
        return jnp.transpose(x[0], s.block)
    if s.kind == "move":  # the float op itself on the int8 values (quantization kept)
        primitive, params, operands = s.block
        return primitive.bind(x[0], *(jnp.asarray(o) for o in operands), **params)
    if s.kind == "concat":
        axis, requants = s.block
        return jnp.concatenate([v if r is None else blocks.requantize_s8(v, *r) for v, r in zip(x, requants)], axis)
    if s.kind in ACTIVATIONS_S16 and getattr(s.block, "activation_bits", 8) == 16:
        return ACTIVATIONS_S16[s.kind][1](x[0], s.block)
    if s.kind in ACTIVATIONS:
        return ACTIVATIONS[s.kind][1](x[0], s.block)
    if s.kind == "lstm":  # w: the four gates' input weights, recurrent weights, biases
        xs = x[0] if x[0].ndim == 3 else x[0][:, None, :]  # [time, n]: a batch of one
        ys = lstm_block.lstm(xs, w[0:4], w[4:8], w[8:12], s.block)
        return ys if x[0].ndim == 3 else ys[:, 0, :]
    raise AssertionError(s.kind)


def _calibrate(g: Graph, names: list[str], samples: Sequence[dict]) -> dict:
    """min/max of every layer's float output over the calibration samples; for an LSTM also the
    largest magnitude of its cell state, under ("cell", id(layer))."""
    watched = [layer for layer in g.layers if layer.kind != "const"]  # a constant's range is its value's
    watch = [layer.out for layer in watched]
    cells = [layer for layer in g.layers if layer.kind == "lstm"]

    def run(*xs):
        env = evaluate(g, xs)
        # an LSTM's cell state is inside its scan: its largest magnitude from the recognized LSTM
        return ([(jnp.min(env[v]), jnp.max(env[v])) for v in watch],
                [layer.attrs["lstm"].run(env[layer.ins[0].out])[1] for layer in cells])

    fn = jax.jit(run)
    lo = np.full(len(watch), np.inf)
    hi = np.full(len(watch), -np.inf)
    cmax = np.zeros(len(cells))
    for k, sample in enumerate(samples):
        missing = [n for n in names if n not in sample]
        if missing:
            raise QuantizeError(f"quantize: calibration input {k} lacks {', '.join(missing)}")
        r, c = fn(*[jnp.asarray(sample[n], jnp.float32) for n in names])
        lo = np.minimum(lo, [float(a) for a, _ in r])
        hi = np.maximum(hi, [float(b) for _, b in r])
        cmax = np.maximum(cmax, [float(v) for v in c])
    ranges = {id(layer): (lo[i], hi[i]) for i, layer in enumerate(watched)}
    ranges.update({id(layer): (float(layer.attrs["value"].min()), float(layer.attrs["value"].max()))
                   for layer in g.layers if layer.kind == "const"})
    ranges.update({("cell", id(layer)): cmax[i] for i, layer in enumerate(cells)})
    return ranges


def _weight_scales(w: np.ndarray, per_channel: bool, bits: int = 8) -> np.ndarray:
    """Symmetric: scale = max|w| / 127 (int4: / 7) over the last (output) axis or the whole tensor."""
    amax = np.abs(w).reshape(-1, w.shape[-1]).max(axis=0) if per_channel else np.array([np.abs(w).max()])
    return np.where(amax > 0, amax / _QMAX[bits], 1.0)


_QMAX = {8: 127, 4: 7}  # symmetric ranges: TFLite's int8 [-127, 127] and int4 [-7, 7]


def _quant_weights(w, scales, bits: int = 8):
    return np.clip(np.round(w / scales), -_QMAX[bits], _QMAX[bits]).astype(np.int8)


def _mults(real) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ms = [quantize_multiplier(float(r)) for r in np.atleast_1d(real)]
    return tuple(m for m, _ in ms), tuple(s for _, s in ms)


def quantize(fn: Callable, params: dict, calibration_inputs: Sequence[dict], name: str | None = None,
             weight_bits: int = 8, activation_bits: int = 8):
    """Quantize float model `fn` (parameters: its inputs, then weights given in `params`) with
    min/max calibration over `calibration_inputs` (a list of {input name: float array}).
    Returns (model, qparams): model(**int8_inputs, **qparams) gives the int8 outputs.
    `weight_bits=4`: conv, depthwise and dense weights symmetric int4 ([-7, 7], scales as for
    int8), kept packed two a byte (blocks.pack_int4) and run by CMSIS-NN's s4 functions, for half
    the weights' flash; transposed convolutions keep int8 (CMSIS-NN has no s4 one).
    `activation_bits=16`: TFLite's 16x8 scheme, run by CMSIS-NN's s16 functions -- int16
    activations (symmetric), int8 weights, int64 biases; the model takes and gives int16, 256
    times finer than int8 for the same range. Its layers: conv, depthwise, dense, pools, add,
    relu, reshape, pad, transpose and the data-movement ops."""
    if weight_bits not in _QMAX:
        raise QuantizeError(f"quantize: weight_bits={weight_bits!r}: 8 or 4")
    if activation_bits not in (8, 16):
        raise QuantizeError(f"quantize: activation_bits={activation_bits!r}: 8 or 16")
    if activation_bits == 16 and weight_bits != 8:
        raise QuantizeError("quantize: activation_bits=16 takes int8 weights (CMSIS-NN has no s16 x s4 function)")
    names = [n for n in inspect.signature(fn).parameters]
    input_names = [n for n in names if n not in params]
    unknown = [k for k in params if k not in names]
    if unknown:
        raise QuantizeError(f"quantize: {', '.join(unknown)} are not parameters of {fn.__name__}")
    if not calibration_inputs:
        raise QuantizeError("quantize: needs at least one calibration input")
    first = calibration_inputs[0]
    args = [np.asarray(first[n], np.float32) if n in input_names else np.asarray(params[n], np.float32)
            for n in names]
    g = _graph(jax.make_jaxpr(fn)(*args), names, input_names, params)
    ranges = _calibrate(g, input_names, calibration_inputs)

    index = {id(layer): i for i, layer in enumerate(g.layers)}
    qp: list[QParams] = []
    steps: list[Step] = []
    qparams: dict[str, np.ndarray] = {}
    taken = set(input_names)
    origin: dict[str, str] = {}  # param name -> the user's weight it was quantized from

    def pname(var, fallback):
        n = g.origin.get(var, fallback)
        first = n
        while n in taken:
            n = n + "_"
        taken.add(n)
        if var is not None and var in g.origin:
            origin[n] = first
        return n

    for i, layer in enumerate(g.layers):
        if layer.kind == "input":
            qp.append(activation_qparams(*ranges[id(layer)], activation_bits))
            continue
        if activation_bits == 16 and layer.kind not in S16_LAYERS:
            what = "a constant operand of add, sub or mul" if layer.kind == "const" else layer.kind
            raise QuantizeError(f"quantize: {what} at {layer.where} has no int16 (16x8) block yet; "
                                "quantize with activation_bits=8")
        if layer.kind == "const":  # an operand of add/sub/mul, stored as an int8 tensor
            q = activation_qparams(*ranges[id(layer)])
            name = pname(layer.attrs["var"], f"c{i}")
            qparams[name] = q.quantize(layer.attrs["value"])
            steps.append(Step("const", None, (), weight=name))
            qp.append(q)
            continue
        src = [index[id(p)] for p in layer.ins]
        qin = qp[src[0]]
        rng = (*ranges[id(layer)], ranges[("cell", id(layer))]) if layer.kind == "lstm" else ranges[id(layer)]
        try:
            step, q = _layer(layer, i, qin, [qp[s] for s in src], rng, src, qparams, pname, weight_bits,
                             activation_bits)
        except ValueError as e:  # a block's parameters out of what its kernel takes (params.py)
            raise QuantizeError(f"quantize: {layer.kind} at {layer.where}: {e}") from None
        steps.append(step)
        qp.append(q)
    steps = _shared(steps, qparams, origin)
    by_out = {layer.out: i for i, layer in enumerate(g.layers)}
    out_index = [by_out[v] for v in g.outvars]
    model = QuantizedModel(name or f"{fn.__name__}_int8", input_names, qp[:len(input_names)],
                           [qp[i] for i in out_index], steps, out_index, list(qparams), qp[len(input_names):], g)
    return model, qparams


def _shared(steps: list[Step], qparams: dict, origin: dict) -> list[Step]:
    """One array for the layers that quantized one weight of the user's to the same values (the
    steps of an unrolled scan, a weight used twice): the later names dropped from `qparams`, their
    steps reading the first."""
    first: dict = {}
    same: dict[str, str] = {}
    for n, a in list(qparams.items()):
        if n in origin:
            a = np.asarray(a)
            n0 = first.setdefault((origin[n], a.dtype.str, a.shape, a.tobytes()), n)
            if n0 != n:
                same[n] = n0
                del qparams[n]
    if not same:
        return steps
    pick = lambda n: same.get(n, n) if n else n
    return [replace(s, weight=pick(s.weight), bias=pick(s.bias), arrays=tuple(map(pick, s.arrays))) for s in steps]


def _graph(closed, names: list[str], input_names: list[str], params: dict) -> Graph:
    """The traced model's layers; a scan that is not an LSTM unrolled into its steps first."""
    unrolled = []
    while True:
        invars = closed.jaxpr.invars
        act_invars = [v for n, v in zip(names, invars) if n in input_names]
        pvals = {v: np.asarray(params[n], np.float32) for n, v in zip(names, invars) if n in params}
        pnames = {v: n for n, v in zip(names, invars) if n in params}
        try:
            return build(closed, act_invars, pvals, pnames)
        except ScanToUnroll as s:
            if len(unrolled) >= MAX_UNROLLED_SCANS:
                raise QuantizeError(f"quantize: more than {MAX_UNROLLED_SCANS} lax.scan to unroll") from None
            unrolled.append(s)
            closed = scan_unroll.unroll(closed, s.body)
        except QuantizeError as e:
            inside = [s for s in unrolled if getattr(e, "where", None) in s.inside]
            if not inside:
                raise
            s = inside[-1]
            raise QuantizeError(f"{e} (in a step of the lax.scan at {s.where}, which quantize() unrolled: not an "
                                f"LSTM, {s.why})") from None


MAX_UNROLLED_SCANS = 16  # scans of distinct bodies (a nested one's copies go in one pass)


def _lstm(layer: Layer, i: int, qin: QParams, rng, src, qparams, pname):
    """TFLite's integer LSTM from a recognized float one (lstm_scan.Lstm): per-tensor symmetric int8
    weights for each gate's input and recurrent product, int32 biases at input x weight scale, the
    hidden state (the output) asymmetric int8 from its calibrated range, the cell state int16 at
    the power of two that holds its largest calibrated magnitude; the gates at TFLite Micro's fixed
    int16 scales (lstm.py)."""
    m = layer.attrs["lstm"]
    lo, hi, cmax = rng
    q = activation_qparams(lo, hi)
    power = int(np.clip(math.ceil(math.log2(max(float(cmax), 1e-6) / 32767.0)), *lstm_block.CELL_POWERS))
    cell_s = 2.0 ** power
    x_shape = tuple(layer.ins[0].out.aval.shape)
    time, batch, n = x_shape if len(x_shape) == 3 else (x_shape[0], 1, x_shape[1])
    names, gates, wx8, wh8, biases = [], [], [], [], []
    for k, gate in enumerate(lstm_scan.GATES):
        wxs, whs = _weight_scales(m.wx[k], False)[0], _weight_scales(m.wh[k], False)[0]
        wx8.append(np.ascontiguousarray(_quant_weights(m.wx[k], wxs).T))  # [cells, n], as the block reads it
        wh8.append(np.ascontiguousarray(_quant_weights(m.wh[k], whs).T))
        biases.append(np.clip(np.round(m.b[k] / (qin.scale * wxs)), -(1 << 31), (1 << 31) - 1).astype(np.int32))
        gates.append(quantize_multiplier(qin.scale * wxs / lstm_block.GATE_SCALE)
                     + quantize_multiplier(q.scale * whs / lstm_block.GATE_SCALE))
    for what, arrays in (("wx", wx8), ("wh", wh8), ("b", biases)):
        for gate, a in zip(lstm_scan.GATES, arrays):
            name = pname(None, f"lstm{i}_{what}_{gate}")
            qparams[name] = a
            names.append(name)
    g_out = lstm_block.GATE_OUT_SCALE
    block = LstmParams(batch=batch, time=time, input_size=n, cells=m.cells, time_major=True,
                       input_zero_point=qin.zero_point, hidden_zero_point=q.zero_point, gates=tuple(gates),
                       forget_mul=quantize_multiplier(g_out), input_mul=quantize_multiplier(g_out * g_out / cell_s),
                       output_mul=quantize_multiplier(g_out * g_out / q.scale), cell_scale_power=power, cell_clip=0)
    return Step("lstm", block, tuple(src), arrays=tuple(names)), q


# the layers the 16x8 scheme quantizes (CMSIS-NN's s16 functions, or moving int16 values as they are)
S16_LAYERS = ("conv", "depthwise", "dense", "maxpool", "avgpool", "gap", "mean", "add", "sub", "mul", "softmax",
              "logistic", "tanh", "leaky_relu", "reshape", "pad", "transpose", "move")
ADD_LEFT_SHIFT_S16 = 15  # TFLite's int16 add


def _act(relu: bool, q: QParams) -> tuple[int, int]:
    bottom, top = int_range(q.bits)
    return (max(bottom, q.zero_point), top) if relu else (bottom, top)


def _layer(layer: Layer, i: int, qin: QParams, qins, rng, src, qparams, pname, weight_bits: int = 8,
           activation_bits: int = 8):
    a = layer.attrs
    s16 = {"activation_bits": 16} if activation_bits == 16 else {}
    x_shape = tuple(layer.ins[0].out.aval.shape)
    out_shape = tuple(layer.out.aval.shape)
    if layer.kind == "lstm":
        return _lstm(layer, i, qin, rng, src, qparams, pname)
    if layer.kind in ("conv", "depthwise", "tconv", "dense"):
        q = activation_qparams(*rng, activation_bits)
        w = a["w"]
        per_channel = layer.kind != "dense"
        bits = 8 if layer.kind == "tconv" else weight_bits
        ws = _weight_scales(w, per_channel, bits)
        bias = a.get("bias")
        wname = pname(a["w_var"], f"w{i}")
        bname = pname(a["b_var"], f"b{i}") if bias is not None else None
        if bias is not None:
            qb = np.round(bias / (qin.scale * ws))
            if s16:  # int64, carried as its int32 words
                qparams_b = blocks.bias_words(np.clip(qb, -(1 << 62), 1 << 62).astype(np.int64))
            else:
                qparams_b = np.clip(qb, -(1 << 31), (1 << 31) - 1).astype(np.int32)
        mults, shifts = _mults(qin.scale * ws / q.scale)
        common = dict(input_offset=-qin.zero_point, output_offset=q.zero_point,
                      activation=_act(layer.relu, q), multipliers=mults, shifts=shifts, **s16)
        if layer.kind == "conv":
            kh, kw, cin, cout = w.shape
            qparams[wname] = _quant_weights(w, ws, bits).transpose(3, 0, 1, 2)  # HWIO -> OHWI
            block = ConvParams(input_dims=x_shape, filter_dims=(cout, kh, kw, cin), output_dims=out_shape,
                               stride=a["stride"], padding=a["padding"], weight_bits=bits, **common)
        elif layer.kind == "tconv":
            kh, kw, cin, cout = w.shape
            # HWIO as XLA's stride-1 window reads it -> OHWI reversed, as TRANSPOSE_CONV scatters
            qparams[wname] = np.ascontiguousarray(_quant_weights(w, ws)[::-1, ::-1].transpose(3, 0, 1, 2))
            block = TransposeConvParams(input_dims=x_shape, filter_dims=(cout, kh, kw, cin), output_dims=out_shape,
                                        stride=a["stride"], padding=a["padding"], **common)  # never s16
        elif layer.kind == "depthwise":
            kh, kw, _, cout = w.shape
            qparams[wname] = _quant_weights(w, ws, bits).transpose(2, 0, 1, 3)  # HW1C -> 1HWC
            block = DepthwiseParams(input_dims=x_shape, filter_dims=(1, kh, kw, cout), output_dims=out_shape,
                                    ch_mult=a["ch_mult"], stride=a["stride"], padding=a["padding"],
                                    weight_bits=bits, **common)
        else:
            qparams[wname] = np.ascontiguousarray(_quant_weights(w, ws, bits).T)  # [in, out] -> [out, in]
            block = FullyConnectedParams(batch=x_shape[0], in_features=w.shape[0], out_features=w.shape[1],
                                         weight_bits=bits, **common)
        if bits == 4:  # kept as the s4 functions read them (and TFLite's file holds them)
            qparams[wname] = blocks.pack_int4(qparams[wname])
        if bias is not None:
            qparams[bname] = qparams_b
        return Step(layer.kind, block, tuple(src), wname, bname), q
    if layer.kind in ("maxpool", "avgpool", "gap"):
        if layer.kind == "gap":
            n, h, wd, c = x_shape
            window, stride, padding, odims = (h, wd), (1, 1), ((0, 0), (0, 0)), (n, 1, 1, c)
        else:
            window, stride, padding, odims = a["window"], a["stride"], a["padding"], out_shape
        block = PoolParams(kind="max" if layer.kind == "maxpool" else "avg", input_dims=x_shape, filter=window,
                           output_dims=odims, stride=stride, padding=padding, activation=_act(layer.relu, qin), **s16)
        return Step(layer.kind, block, tuple(src)), qin
    if layer.kind in ("add", "sub"):  # TFLite's ADD and SUB: one scheme
        q = activation_qparams(*rng, activation_bits)
        q1, q2 = qins
        twice = 2 * max(q1.scale, q2.scale)
        left = ADD_LEFT_SHIFT_S16 if s16 else ADD_LEFT_SHIFT
        m1, s1 = quantize_multiplier(q1.scale / twice)
        m2, s2 = quantize_multiplier(q2.scale / twice)
        mo, so = quantize_multiplier(twice / ((1 << left) * q.scale))
        block = (AddParams if layer.kind == "add" else SubParams)(
            shape=out_shape, input_1_offset=-q1.zero_point, input_1_mult=m1, input_1_shift=s1,
            input_2_offset=-q2.zero_point, input_2_mult=m2, input_2_shift=s2, left_shift=left,
            out_offset=q.zero_point, out_mult=mo, out_shift=so, activation=_act(layer.relu, q), **s16)
        return Step(layer.kind, block, tuple(src)), q
    if layer.kind == "mul":  # TFLite's MUL: the inputs' scales' product over the output's
        q = activation_qparams(*rng, activation_bits)
        q1, q2 = qins
        mo, so = quantize_multiplier(q1.scale * q2.scale / q.scale)
        shape_2 = tuple(layer.ins[1].out.aval.shape)
        block = MulParams(shape=out_shape, input_1_offset=-q1.zero_point, input_2_offset=-q2.zero_point,
                          out_offset=q.zero_point, out_mult=mo, out_shift=so, activation=_act(layer.relu, q),
                          shape_2=None if shape_2 == out_shape else shape_2, **s16)
        return Step("mul", block, tuple(src)), q
    if layer.kind == "softmax":
        rows = int(np.prod(out_shape[:-1]))
        if activation_bits == 16:  # TFLite's int16 softmax: output scale 1/32768, zero point 0
            return Step("softmax", softmax_s16_params(qin.scale, rows, out_shape[-1]), tuple(src)), \
                QParams(1 / 32768, 0, 16)
        return Step("softmax", softmax_params(qin.scale, rows, out_shape[-1]), tuple(src)), QParams(1 / 256, -128)
    if layer.kind == "reshape":
        return Step("reshape", a["shape"], tuple(src)), qin
    if layer.kind == "mean":
        q = activation_qparams(*rng, activation_bits)
        m, sh = quantize_multiplier(qin.scale / q.scale)
        block = MeanParams.of(x_shape, a["axes"], a["keep"], qin.zero_point, m, sh, q.zero_point, activation_bits)
        return Step("mean", block, tuple(src)), q
    if layer.kind == "pad":  # zeros are the zero point: the input's quantization holds
        return Step("pad", (a["widths"], qin.zero_point), tuple(src)), qin
    if layer.kind == "transpose":
        return Step("transpose", a["perm"], tuple(src)), qin
    if layer.kind == "move":
        return Step("move", (a["primitive"], a["params"], a["operands"]), tuple(src)), qin
    if layer.kind == "concat":
        # TFLite's CONCATENATION copies: inputs and output share one quantization, the output's
        # range the union of the inputs'; an input quantized otherwise goes through TFLite's
        # int8 -> int8 QUANTIZE (Requantize) first
        q = activation_qparams(*rng)
        requants = tuple(None if (qi.scale, qi.zero_point) == (q.scale, q.zero_point)
                         else (qi.zero_point, *quantize_multiplier(qi.scale / q.scale), q.zero_point)
                         for qi in qins)
        return Step("concat", (a["axis"], requants), tuple(src)), q
    if layer.kind in ACTIVATIONS_S16 and activation_bits == 16:  # int16 LOGISTIC / TANH: Q0.15 out
        q = QParams(activations_s16.OUT_SCALE, 0, 16)
        block = ACTIVATIONS_S16[layer.kind][0](x_shape, qin.scale, 0, q.scale, 0)
        return Step(layer.kind, block, tuple(src)), q
    if layer.kind in ACTIVATIONS:
        derive = ACTIVATIONS[layer.kind][0]
        # LOGISTIC and TANH write TFLite's fixed output quantization; the others their calibrated range
        q = FIXED_OUTPUT.get(layer.kind) or activation_qparams(*rng, activation_bits)
        extra = (a["alpha"], activation_bits) if layer.kind == "leaky_relu" else ()
        try:
            block = derive(x_shape, qin.scale, qin.zero_point, q.scale, q.zero_point, *extra)
        except ValueError as e:
            raise QuantizeError(f"quantize: {layer.kind} at {layer.where}: {e}") from None
        return Step(layer.kind, block, tuple(src)), q
    raise AssertionError(layer.kind)
