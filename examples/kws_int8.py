"""MLPerf Tiny keyword spotting DS-CNN in int8: examples/kws_dscnn.py quantized post-training
by specializer.quant.quantize (TFLite's scheme: per-channel int8 conv weights, per-tensor dense,
asymmetric int8 activations, relu folded into the clamps) with min/max calibration over 32
MFCC-shaped inputs at a fixed seed. The int8 model is a plain JAX function of blocks
(conv, depthwise conv, global average pool, dense) computing what CMSIS-NN's s8 kernels
compute. Input and output quantization: kws_int8.inputs["x"], kws_int8.outputs[0]."""
import numpy as np
from kws_dscnn import kws_dscnn

from specializer.quant.ptq import quantize

_cal = np.random.default_rng(7)
_calibration = [{"x": _cal.normal(size=(1, 49, 10, 1)).astype(np.float32)} for _ in range(32)]
kws_int8, _params = quantize(kws_dscnn, kws_dscnn.weights, _calibration, name="kws_int8")
kws_int8.example_inputs = {"x": kws_int8.inputs["x"].quantize(kws_dscnn.example_inputs["x"])}
kws_int8.weights = _params
