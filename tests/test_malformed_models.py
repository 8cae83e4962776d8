"""Malformed model files: a corpus of .tflite and .onnx files, each a small valid model (the
builders of test_tflite_import.py and onnx_models.py) with exactly one defect made on purpose
through the format's own object API (the flatbuffer schema's ModelT, onnx's protobuf), not
random byte flips (those are in test_tflite_import.py and test_onnx_import.py).

The corpus covers, for .tflite: a wrong file identifier; a file cut inside its header and in the
middle; a buffer index, an operator's input and output, the subgraph's input and output and an
opcode index out of range; a weight buffer shorter and longer than its shape needs; an output
shape that does not fit its conv, a filter of the wrong rank; an int8 input and filter without quantization; a zero,
negative and NaN scale; a zero point outside int8; per-channel scales not one per channel, a
zero point count not the scale count, a quantized dimension outside the shape; an operator
version TFLite does not define (CONV_2D, FULLY_CONNECTED); no subgraph; an SVDF state of the
wrong shape, an SVDF without its options, an LSTM of 20 inputs, LSTM weights of the wrong rank. For .onnx: bytes that
are no protobuf and a cut one; an initializer whose raw data is shorter and longer than its
dims; a node input that names no value, and one written by a later node; no graph output, and
one no node writes; a filter that does not fit its Conv; a zero, negative and NaN scale of a
QuantizeLinear / DequantizeLinear; per-channel scales not one per channel; an opset newer than
the installed onnx knows; a node of another domain, with and without its opset import; no IR
version.

Every one is read the way capture reads it (imported.read) and gives exactly its line below;
through the command (`specialize capture FILE -o DIR`) it is that line after `specialize:
error: `, exit status 2, nothing on stdout, no traceback and no output directory; a few of them
through a real process too.
"""

from __future__ import annotations

import subprocess
import sys

import flatbuffers
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx_models import float_cnn, qdq_cnn
from test_lstm_s8 import lstm_model
from test_svdf_s8 import svdf_model
from test_tflite_import import conv_model, dense_model
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from specializer.capture import imported
from specializer.cli import main
from specializer.errors import UserError

# ---------------------------------------------------------------- .tflite: one defect each


def tflite_base() -> bytes:
    """An int8 CONV_2D, per-channel: tensors 0 'x', 1 'w' [5, 3, 3, 3], 2 'b', 3 'y'; 3 buffers."""
    return conv_model(np.random.default_rng(0))


def edit_tflite(change, data: bytes | None = None) -> bytes:
    """The model with `change(model)` applied to its object form (schema ModelT), packed again."""
    model = fb.ModelT.InitFromPackedBuf(tflite_base() if data is None else data, 0)
    change(model)
    builder = flatbuffers.Builder(4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def setting(part, **fields):
    """A change that sets `fields` on part(model), e.g. a tensor or the operator."""
    def change(m):
        for f, v in fields.items():
            setattr(part(m), f, v)
    return change


def tensor(k: int, **fields):
    return setting(lambda m: m.subgraphs[0].tensors[k], **fields)


def quant(k: int, **fields):
    return setting(lambda m: m.subgraphs[0].tensors[k].quantization, **fields)


def operator(**fields):
    return setting(lambda m: m.subgraphs[0].operators[0], **fields)


def subgraph(**fields):
    return setting(lambda m: m.subgraphs[0], **fields)


def opcode(**fields):
    return setting(lambda m: m.operatorCodes[0], **fields)


def weight_bytes(extra: int):
    """A change that makes the filter's buffer `extra` bytes longer (shorter when negative)."""
    def change(m):
        buf = m.buffers[m.subgraphs[0].tensors[1].buffer]
        buf.data = np.resize(buf.data, len(buf.data) + extra)
    return change


TFLITE = {  # case: (the file's bytes, made lazily; its one line)
    "identifier": (lambda: tflite_base()[:4] + b"XXXX" + tflite_base()[8:],
                   "m.tflite: not a TFLite flatbuffer (no 'TFL3' file identifier)"),
    "cut in the header": (lambda: tflite_base()[:6],
                          "m.tflite: not a TFLite flatbuffer (6 bytes; its header alone is 8)"),
    "cut in the middle": (lambda: tflite_base()[:400],
                          "m.tflite: truncated or damaged flatbuffer: a table or vector lies past the end "
                          "of its 400 bytes"),
    "buffer index": (lambda: edit_tflite(tensor(1, buffer=99)),
                     "m.tflite: tensor 1 ('w'): buffer 99 is out of range (the file has 3 buffers)"),
    "operator input index": (lambda: edit_tflite(operator(inputs=[0, 40, 2])),
                             "m.tflite: operator 0 (CONV_2D): input 1 is tensor 40, out of range "
                             "(the graph has 4 tensors)"),
    "operator output index": (lambda: edit_tflite(operator(outputs=[-1])),
                              "m.tflite: operator 0 (CONV_2D): output 0 is tensor -1, out of range "
                              "(the graph has 4 tensors)"),
    "subgraph input index": (lambda: edit_tflite(subgraph(inputs=[7])),
                             "m.tflite: subgraph input 0 is tensor 7, out of range (the graph has 4 tensors)"),
    "subgraph output index": (lambda: edit_tflite(subgraph(outputs=[3, 4])),
                              "m.tflite: subgraph output 1 is tensor 4, out of range (the graph has 4 tensors)"),
    "opcode index": (lambda: edit_tflite(operator(opcodeIndex=3)),
                     "m.tflite: operator 0: opcode index 3 is out of range (the file has 1 operator code)"),
    "weights too short": (lambda: edit_tflite(weight_bytes(-3)),
                          "m.tflite: tensor 1 ('w'): 132 bytes of data, but INT8[5, 3, 3, 3] takes 135"),
    "weights too long": (lambda: edit_tflite(weight_bytes(4)),
                         "m.tflite: tensor 1 ('w'): 139 bytes of data, but INT8[5, 3, 3, 3] takes 135"),
    "output channels": (lambda: edit_tflite(tensor(3, shape=[1, 9, 8, 4])),
                        "m.tflite: operator 0 (CONV_2D): output (1, 9, 8, 4) has 4 channels; the filter "
                        "(5, 3, 3, 3) makes 5"),
    "filter rank": (lambda: edit_tflite(tensor(1, shape=[5, 27])),
                    "m.tflite: operator 0 (CONV_2D): filter (5, 27) is not 4-D"),
    "input without quantization": (lambda: edit_tflite(tensor(0, quantization=None)),
                                   "m.tflite: input tensor 0 ('x') needs one scale and zero point"),
    "filter without quantization": (lambda: edit_tflite(tensor(1, quantization=None)),
                                    "m.tflite: operator 0 (CONV_2D): int8 filter (tensor 1) has no quantization"),
    "zero scale": (lambda: edit_tflite(quant(0, scale=[0.0])),
                   "m.tflite: tensor 0 ('x'): quantization scale 0.0 is not a positive finite number"),
    "negative scale": (lambda: edit_tflite(quant(1, scale=[0.01, 0.01, -0.5, 0.01, 0.01])),
                       "m.tflite: tensor 1 ('w'): quantization scale -0.5 is not a positive finite number"),
    "nan scale": (lambda: edit_tflite(quant(3, scale=[float("nan")])),
                  "m.tflite: tensor 3 ('y'): quantization scale nan is not a positive finite number"),
    "zero point outside int8": (lambda: edit_tflite(quant(0, zeroPoint=[300])),
                                "m.tflite: tensor 0 ('x'): zero point 300 is outside int8's [-128, 127]"),
    "per-channel scale count": (lambda: edit_tflite(quant(1, scale=[0.01] * 4, zeroPoint=[0] * 4)),
                                "m.tflite: tensor 1 ('w'): 4 scales along dimension 0 of [5, 3, 3, 3]; per "
                                "channel it takes 5"),
    "zero point count": (lambda: edit_tflite(quant(1, zeroPoint=[0, 0])),
                         "m.tflite: tensor 1 ('w'): 5 scales but 2 zero points"),
    "quantized dimension": (lambda: edit_tflite(quant(1, quantizedDimension=7)),
                            "m.tflite: tensor 1 ('w'): quantized dimension 7 is outside its shape [5, 3, 3, 3]"),
    "unknown op version": (lambda: edit_tflite(opcode(version=99)),
                           "m.tflite: operator 0 (CONV_2D): version 99 is unknown (TFLite defines versions "
                           "1-8 of CONV_2D)"),
    "unknown dense version": (lambda: edit_tflite(opcode(version=15), dense_model(np.random.default_rng(0))),
                              "m.tflite: operator 0 (FULLY_CONNECTED): version 15 is unknown (TFLite defines "
                              "versions 1-14 of FULLY_CONNECTED)"),
    "no subgraph": (lambda: edit_tflite(setting(lambda m: m, subgraphs=[])),
                    "m.tflite: 0 subgraphs; the reader takes models of one subgraph (no control flow)"),
    # the recurrent ops (test_svdf_s8.py, test_lstm_s8.py build them): tensor 4 is SVDF's state,
    # tensor 5 the LSTM's first recurrent weights
    "svdf state shape": (lambda: edit_tflite(tensor(4, shape=[1, 40]), svdf_model("rank2_odd")),
                         "m.tflite: operator 0 (SVDF): state [1, 40] is not [batch, filters * memory] = [1, 42]"),
    "svdf without options": (lambda: edit_tflite(operator(builtinOptions=None, builtinOptionsType=0),
                                                 svdf_model("rank2_odd")),
                             "m.tflite: operator 0 (SVDF): has no SVDFOptions"),
    "lstm inputs": (lambda: edit_tflite(operator(inputs=[*range(9), -1, -1, -1, 9, 10, 11, 12, -1, -1, 13, 14]),
                                        lstm_model("odd_sizes")),
                    "m.tflite: operator 0 (UNIDIRECTIONAL_SEQUENCE_LSTM): 20 inputs (TFLite's fully integer LSTM "
                    "has 24)"),
    "lstm weights rank": (lambda: edit_tflite(tensor(5, shape=[81]), lstm_model("odd_sizes")),
                          "m.tflite: operator 0 (UNIDIRECTIONAL_SEQUENCE_LSTM): recurrent weights (tensor 5) is 1-D "
                          "[81], not 2-D"),
}


# ---------------------------------------------------------------- .onnx: one defect each

def float_base() -> onnx.ModelProto:
    """Conv 'conv1' (w1 [6, 2, 3, 3]) -> BatchNormalization -> Relu 'relu1' (node 2) -> MaxPool
    'pool1' -> ... -> Softmax 'softmax' (output 'prob'), opset 17."""
    return float_cnn(np.random.default_rng(1))


def qdq_base() -> onnx.ModelProto:
    """Its QDQ int8 form: node 0 the input's QuantizeLinear ('xq.s'), node 2 the first filter's
    DequantizeLinear ('w1d.s', 6 scales along axis 0), node 6 the first Relu's QuantizeLinear."""
    return qdq_cnn(np.random.default_rng(2), calibration=1)


def edit_onnx(change, base=float_base) -> bytes:
    m = base()
    change(m)
    return m.SerializeToString()


def initializer(m, name: str):
    return next(t for t in m.graph.initializer if t.name == name)


def set_initializer(name: str, make):
    """A change that replaces initializer `name` by make(its array)."""
    def change(m):
        t = initializer(m, name)
        t.CopyFrom(numpy_helper.from_array(np.asarray(make(numpy_helper.to_array(t))), name))
    return change


def raw_bytes(name: str, extra: int):
    def change(m):
        t = initializer(m, name)
        t.raw_data = t.raw_data[:extra] if extra < 0 else t.raw_data + bytes(extra)
    return change


def node_input(k: int, name: str):
    return lambda m: m.graph.node[k].input.__setitem__(0, name)


def other_domain(imported_too: bool):
    def change(m):
        m.graph.node[2].domain = "com.example"
        if imported_too:
            m.opset_import.append(helper.make_opsetid("com.example", 1))
    return change


def _one_negative(s):
    s = s.copy()
    s[3] = -0.5
    return s


ONNX_OPSET, ONNX_VERSION = onnx.defs.onnx_opset_version(), onnx.__version__
ONNX = {
    "not a protobuf": (lambda: b"\x0a\xff\xff\xff\xff\x0f not a model",
                       "m.onnx: not an ONNX model (the protobuf does not parse: ..."),
    "cut protobuf": (lambda: float_base().SerializeToString()[:300],
                     "m.onnx: not an ONNX model (the protobuf does not parse: ..."),
    "raw data too short": (lambda: edit_onnx(raw_bytes("w1", -8)),
                           "m.onnx: initializer 'w1': 424 bytes of raw data, but float32[6, 2, 3, 3] takes 432"),
    "raw data too long": (lambda: edit_onnx(raw_bytes("w1", 8)),
                          "m.onnx: initializer 'w1': 440 bytes of raw data, but float32[6, 2, 3, 3] takes 432"),
    "input names nothing": (lambda: edit_onnx(node_input(2, "nothere")),
                            "m.onnx: node 2 (Relu 'relu1'): input 0 'nothere' is no graph input, initializer or "
                            "node output"),
    "input from a later node": (lambda: edit_onnx(node_input(2, "p1")),
                                "m.onnx: node 2 (Relu 'relu1'): input 0 'p1' is written by a later node (node 3); "
                                "nodes must be in topological order"),
    "no graph output": (lambda: edit_onnx(lambda m: m.graph.ClearField("output")),
                        "m.onnx: the graph has no outputs"),
    "output written by no node": (lambda: edit_onnx(lambda m: setattr(m.graph.output[0], "name", "ghost")),
                                  "m.onnx: graph output 'ghost' is written by no node"),
    "filter shape": (lambda: edit_onnx(set_initializer("w1", lambda w: np.ones((6, 3, 3, 3), np.float32))),
                     "m.onnx: node 0 (Conv 'conv1'): filter [6, 3, 3, 3] does not fit input [1, 2, 8, 8] with "
                     "group=1"),
    "zero scale": (lambda: edit_onnx(set_initializer("xq.s", lambda s: np.float32(0)), qdq_base),
                   "m.onnx: node 0 (QuantizeLinear): scale 0.0 is not a positive finite number"),
    "negative scale": (lambda: edit_onnx(set_initializer("w1d.s", _one_negative), qdq_base),
                       "m.onnx: node 2 (DequantizeLinear): scale -0.5 is not a positive finite number"),
    "nan scale": (lambda: edit_onnx(set_initializer("r1q.s", lambda s: np.float32("nan")), qdq_base),
                  "m.onnx: node 6 (QuantizeLinear): scale nan is not a positive finite number"),
    "per-channel scale count": (lambda: edit_onnx(lambda m: [set_initializer("w1d.s", lambda s: s[:4])(m),
                                                             set_initializer("w1d.z", lambda z: z[:4])(m)], qdq_base),
                                "m.onnx: node 2 (DequantizeLinear): 4 scales along axis 0 of a constant of shape "
                                "[6, 2, 3, 3] (it takes 1, or one per channel: 6)"),
    "unknown opset": (lambda: edit_onnx(lambda m: setattr(m.opset_import[0], "version", 99)),
                      f"m.onnx: opset 99 of the default domain is unknown (onnx {ONNX_VERSION} defines opsets "
                      f"up to {ONNX_OPSET})"),
    "other domain": (lambda: edit_onnx(other_domain(True)),
                     "m.onnx: node 2 (com.example:Relu 'relu1'): domain 'com.example' is not supported (the reader "
                     "takes the default ONNX domain only)"),
    "other domain, not imported": (lambda: edit_onnx(other_domain(False)),
                                   "m.onnx: node 2 (com.example:Relu 'relu1'): domain 'com.example' is not supported "
                                   "(the reader takes the default ONNX domain only)"),
    "no IR version": (lambda: edit_onnx(lambda m: setattr(m, "ir_version", 0)),
                      "m.onnx: not an ONNX model (no graph or no IR version)"),
}

CORPUS = {**{f"tflite: {k}": (v, "m.tflite") for k, v in TFLITE.items()},
          **{f"onnx: {k}": (v, "m.onnx") for k, v in ONNX.items()}}
# through a real process: both formats; a header, an index, a quantization, a version, a domain
BY_PROCESS = ["tflite: identifier", "tflite: buffer index", "tflite: unknown op version",
              "onnx: not a protobuf", "onnx: zero scale", "onnx: other domain"]


def write_case(case: str, tmp_path):
    (make, _line), name = CORPUS[case]
    d = tmp_path / case.replace(": ", "_").replace(" ", "_").replace(",", "")
    d.mkdir()
    path = d / name
    path.write_bytes(make())
    return path


def assert_line(got: str, want: str) -> None:
    """`want` exactly; a trailing '...': the line starts with the rest (a library's own words follow)."""
    assert "\n" not in got, got
    if want.endswith("..."):
        assert got.startswith(want[:-3]), got
    else:
        assert got == want


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 20 and len(TFLITE) >= 10 and len(ONNX) >= 10


@pytest.mark.parametrize("case", list(CORPUS))
def test_one_line_naming_the_file_and_what_is_wrong(case, tmp_path, capsys):
    path = write_case(case, tmp_path)
    want = CORPUS[case][0][1]
    with pytest.raises(UserError) as e:
        imported.read(path)
    assert_line(str(e.value), want)
    # the command: that line, exit 2, nothing written
    out = path.parent / "out"
    assert main(["capture", str(path), "-o", str(out)]) == 2
    std = capsys.readouterr()
    assert std.out == ""
    assert_line(std.err.removesuffix("\n").removeprefix("specialize: error: "), want)
    assert std.err.startswith("specialize: error: ")
    assert not out.exists()


def test_through_the_command_in_a_process(tmp_path):
    for case in BY_PROCESS:
        path = write_case(case, tmp_path)
        out = path.parent / "out"
        r = subprocess.run([sys.executable, "-m", "specializer.cli", "capture", str(path), "-o", str(out)],
                           capture_output=True, text=True)
        assert r.returncode == 2, (case, r.stderr)
        assert "Traceback" not in r.stderr and r.stdout == "", (case, r.stderr)
        lines = r.stderr.splitlines()
        assert len(lines) == 1, (case, r.stderr)
        assert_line(lines[0].removeprefix("specialize: error: "), CORPUS[case][0][1])
        assert not out.exists(), case
