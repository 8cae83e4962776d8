"""Small ONNX models built with onnx.helper for the reader's and capture's tests: a float CNN and
its QDQ int8 form, quantized here the way a post-training quantizer does it (per-tensor
asymmetric activations from min/max over calibration inputs, per-channel symmetric weights,
int32 biases at input scale x weight scale)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OPSET = 17
QDQ_OPSET = 19  # onnx.reference implements QuantizeLinear / DequantizeLinear from opset 19 on


def tensor(name: str, a: np.ndarray):
    return numpy_helper.from_array(np.asarray(a), name)


def model(nodes, inputs, outputs, inits, opset: int = OPSET, name: str = "m") -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs, [tensor(k, v) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="specializer-tests")
    m.ir_version = 8
    if any(not o.type.tensor_type.HasField("shape") for o in m.graph.output):  # outputs' shapes inferred
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        known = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
        for o in m.graph.output:
            if not o.type.tensor_type.HasField("shape") and known[o.name].type.tensor_type.HasField("shape"):
                o.type.tensor_type.shape.CopyFrom(known[o.name].type.tensor_type.shape)
    onnx.checker.check_model(m)
    return m


def vi(name: str, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(m: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(m.SerializeToString())
    return path


def float_cnn(rng, hw=(8, 8), cin=2) -> onnx.ModelProto:
    """Conv 3x3 pad 1 -> BatchNormalization -> Relu -> MaxPool 2x2 -> Conv (depthwise, stride 2)
    -> Clip(0, 6) -> GlobalAveragePool -> Flatten -> Gemm -> Softmax: conv+BN+relu+pool+gemm+softmax."""
    c1, n_out = 6, 5
    inits = {
        "w1": rng.normal(0, 0.4, (c1, cin, 3, 3)).astype(np.float32), "b1": rng.normal(0, 0.1, c1).astype(np.float32),
        "gamma": rng.uniform(0.5, 1.5, c1).astype(np.float32), "beta": rng.normal(0, 0.2, c1).astype(np.float32),
        "mean": rng.normal(0, 0.2, c1).astype(np.float32), "var": rng.uniform(0.5, 2.0, c1).astype(np.float32),
        "w2": rng.normal(0, 0.4, (c1, 1, 3, 3)).astype(np.float32), "b2": rng.normal(0, 0.1, c1).astype(np.float32),
        "lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32),
        "w3": rng.normal(0, 0.5, (n_out, c1)).astype(np.float32), "b3": rng.normal(0, 0.1, n_out).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn"], name="bn1"),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="dw2", group=c1, strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"], name="relu6"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1),
        helper.make_node("Softmax", ["y"], ["prob"], name="softmax", axis=1),
    ]
    return model(nodes, [vi("x", [1, cin, *hw])], [vi("prob", [1, n_out])], inits, name="float_cnn")


# ---------------------------------------------------------------- QDQ int8

def _act_q(lo: float, hi: float) -> tuple[np.float32, np.int8]:
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = np.float32((hi - lo) / 255) if hi > lo else np.float32(1.0)
    zp = int(np.clip(np.round(-128 - lo / float(s)), -128, 127))
    return s, np.int8(zp)


def _ranges(m: onnx.ModelProto, names, feeds_list) -> dict:
    """min and max of each named value over the calibration inputs (onnx.reference)."""
    ev = ReferenceEvaluator(m)
    out = {n: (np.inf, -np.inf) for n in names}
    for feeds in feeds_list:
        for n, v in zip(names, ev.run(list(names), feeds)):
            out[n] = (min(out[n][0], float(v.min())), max(out[n][1], float(v.max())))
    return out


class QdqBuilder:
    """Builds a QDQ graph: activations quantized per tensor, weights per channel."""

    def __init__(self):
        self.nodes, self.inits = [], {}

    def q(self, x: str, s, zp, out: str) -> str:
        self.inits[f"{out}.s"], self.inits[f"{out}.z"] = np.float32(s), np.int8(zp)
        self.nodes.append(helper.make_node("QuantizeLinear", [x, f"{out}.s", f"{out}.z"], [out]))
        return out

    def dq(self, x: str, out: str, s=None, zp=None, axis=None) -> str:
        if s is not None:
            self.inits[f"{out}.s"], self.inits[f"{out}.z"] = s, zp
        else:  # an activation: the Q node's own scale and zero point
            s_name, z_name = f"{x}.s", f"{x}.z"
            self.nodes.append(helper.make_node("DequantizeLinear", [x, s_name, z_name], [out]))
            return out
        kw = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [x, f"{out}.s", f"{out}.z"], [out], **kw))
        return out

    def weight(self, name: str, w: np.ndarray, axis: int | None = 0) -> tuple[str, np.ndarray]:
        """w quantized symmetric int8 (per channel along axis, or per tensor): (the DQ's output, scales)."""
        if axis is None:
            s = np.array(np.abs(w).max() / 127, np.float32)
            q = np.clip(np.round(w / s), -127, 127).astype(np.int8)
            zp = np.int8(0)
        else:
            red = tuple(i for i in range(w.ndim) if i != axis)
            s = (np.abs(w).max(axis=red) / 127).astype(np.float32)
            shape = [1] * w.ndim
            shape[axis] = -1
            q = np.clip(np.round(w / s.reshape(shape)), -127, 127).astype(np.int8)
            zp = np.zeros(s.shape, np.int8)
        self.inits[f"{name}.q"] = q
        return self.dq(f"{name}.q", name, s, zp, axis), s

    def bias(self, name: str, b: np.ndarray, scale: np.ndarray) -> str:
        scale = np.asarray(scale, np.float32)
        self.inits[f"{name}.q"] = np.round(b / scale).astype(np.int32)
        zp = np.zeros(scale.shape, np.int32) if scale.ndim else np.int32(0)
        return self.dq(f"{name}.q", name, scale, zp, 0 if scale.ndim else None)


def qdq_cnn(rng, hw=(8, 8), cin=2, calibration: int = 8) -> onnx.ModelProto:
    """The QDQ int8 form of: Conv 3x3 pad 1 + Relu -> Conv depthwise stride 2 -> AveragePool 2x2
    -> Flatten -> Gemm -> Softmax, with MaxPool and Add beside: float input and outputs, every
    op between a DequantizeLinear and a QuantizeLinear (outputs: the logits and the softmax)."""
    c1, n_out = 6, 5
    w1, b1 = rng.normal(0, 0.4, (c1, cin, 3, 3)).astype(np.float32), rng.normal(0, 0.2, c1).astype(np.float32)
    w2, b2 = rng.normal(0, 0.4, (c1, 1, 3, 3)).astype(np.float32), rng.normal(0, 0.2, c1).astype(np.float32)
    w3 = rng.normal(0, 0.5, (n_out, c1 * (hw[0] // 4) * (hw[1] // 4))).astype(np.float32)
    b3 = rng.normal(0, 0.2, n_out).astype(np.float32)
    fnodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], group=c1, strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c2"], ["m2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "m2"], ["a2"]),
        helper.make_node("AveragePool", ["a2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
        helper.make_node("Softmax", ["y"], ["prob"], axis=-1),
    ]
    shape = [1, cin, *hw]
    fm = model(fnodes, [vi("x", shape)], [vi("y", [1, n_out]), vi("prob", [1, n_out])],
               {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "w3": w3, "b3": b3}, name="float")
    cal = [{"x": rng.normal(size=shape).astype(np.float32)} for _ in range(calibration)]
    r = _ranges(fm, ["x", "r1", "c2", "m2", "a2", "y"], cal)
    qb = QdqBuilder()
    sx, zx = _act_q(*r["x"])
    s1, z1 = _act_q(*r["r1"])
    s2, z2 = _act_q(*r["c2"])
    sm, zm = s2, z2  # MaxPool keeps its input's quantization
    sa, za = _act_q(*r["a2"])
    sy, zy = _act_q(*r["y"])
    xq = qb.q("x", sx, zx, "xq")
    xd = qb.dq(xq, "xd")
    w1d, ws1 = qb.weight("w1d", w1)
    b1d = qb.bias("b1d", b1, sx * ws1)
    qb.nodes.append(helper.make_node("Conv", [xd, w1d, b1d], ["c1"], name="conv1", pads=[1, 1, 1, 1]))
    qb.nodes.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))
    r1d = qb.dq(qb.q("r1", s1, z1, "r1q"), "r1d")
    w2d, ws2 = qb.weight("w2d", w2)
    b2d = qb.bias("b2d", b2, s1 * ws2)
    qb.nodes.append(helper.make_node("Conv", [r1d, w2d, b2d], ["c2"], name="dw2", group=c1, strides=[2, 2],
                                     pads=[1, 1, 1, 1]))
    c2d = qb.dq(qb.q("c2", s2, z2, "c2q"), "c2d")
    qb.nodes.append(helper.make_node("MaxPool", [c2d], ["m2"], name="max2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    m2d = qb.dq(qb.q("m2", sm, zm, "m2q"), "m2d")
    qb.nodes.append(helper.make_node("Add", [c2d, m2d], ["a2"], name="add2"))
    a2d = qb.dq(qb.q("a2", sa, za, "a2q"), "a2d")
    qb.nodes.append(helper.make_node("AveragePool", [a2d], ["p2"], name="avg2", kernel_shape=[2, 2], strides=[2, 2]))
    p2d = qb.dq(qb.q("p2", sa, za, "p2q"), "p2d")
    qb.nodes.append(helper.make_node("Flatten", [p2d], ["f"], name="flat"))
    fd = qb.dq(qb.q("f", sa, za, "fq"), "fd")
    w3d, ws3 = qb.weight("w3d", w3, axis=None)
    b3d = qb.bias("b3d", b3, np.float32(sa * ws3))
    qb.nodes.append(helper.make_node("Gemm", [fd, w3d, b3d], ["y"], name="fc", transB=1))
    yd = qb.dq(qb.q("y", sy, zy, "yq"), "logits")
    qb.nodes.append(helper.make_node("Softmax", [yd], ["prob"], name="softmax", axis=-1))
    qb.dq(qb.q("prob", 1 / 256, -128, "probq"), "probs")
    return model(qb.nodes, [vi("x", shape)], [vi("logits", [1, n_out]), vi("probs", [1, n_out])], qb.inits,
                 opset=QDQ_OPSET, name="qdq_cnn")


def qdq_gate(rng, hw=(6, 5), cin=3, calibration: int = 8) -> onnx.ModelProto:
    """The QDQ int8 form of a gated unit: Conv 3x3 pad 1 + Relu (the value) times Conv 3x3 pad 1
    (the gate), the product's own quantization (a Mul between DequantizeLinear and
    QuantizeLinear, as the quantizer writes one)."""
    c = 4
    w1, b1 = rng.normal(0, 0.4, (c, cin, 3, 3)).astype(np.float32), rng.normal(0, 0.2, c).astype(np.float32)
    w2, b2 = rng.normal(0, 0.4, (c, cin, 3, 3)).astype(np.float32), rng.normal(0, 0.2, c).astype(np.float32)
    fnodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c1"], ["v"]),
              helper.make_node("Conv", ["x", "w2", "b2"], ["g"], pads=[1, 1, 1, 1]),
              helper.make_node("Mul", ["v", "g"], ["y"])]
    shape = [1, cin, *hw]
    fm = model(fnodes, [vi("x", shape)], [vi("y", [1, c, *hw])], {"w1": w1, "b1": b1, "w2": w2, "b2": b2},
               name="float")
    cal = [{"x": rng.normal(size=shape).astype(np.float32)} for _ in range(calibration)]
    r = _ranges(fm, ["x", "v", "g", "y"], cal)
    qb = QdqBuilder()
    (sx, zx), (sv, zv), (sg, zg), (sy, zy) = (_act_q(*r[n]) for n in ("x", "v", "g", "y"))
    xd = qb.dq(qb.q("x", sx, zx, "xq"), "xd")
    w1d, ws1 = qb.weight("w1d", w1)
    w2d, ws2 = qb.weight("w2d", w2)
    qb.nodes.append(helper.make_node("Conv", [xd, w1d, qb.bias("b1d", b1, sx * ws1)], ["c1"], name="value",
                                     pads=[1, 1, 1, 1]))
    qb.nodes.append(helper.make_node("Relu", ["c1"], ["v"], name="relu"))
    qb.nodes.append(helper.make_node("Conv", [xd, w2d, qb.bias("b2d", b2, sx * ws2)], ["g"], name="gate",
                                     pads=[1, 1, 1, 1]))
    vd, gd = qb.dq(qb.q("v", sv, zv, "vq"), "vd"), qb.dq(qb.q("g", sg, zg, "gq"), "gd")
    qb.nodes.append(helper.make_node("Mul", [vd, gd], ["y"], name="mul"))
    qb.dq(qb.q("y", sy, zy, "yq"), "out")
    return model(qb.nodes, [vi("x", shape)], [vi("out", [1, c, *hw])], qb.inits, opset=QDQ_OPSET,
                 name="qdq_gate")


INT8_VALUES = ("xq", "r1q", "c2q", "m2q", "a2q", "p2q", "fq", "yq", "probq")
