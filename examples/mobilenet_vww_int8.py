"""MLPerf Tiny visual wake words MobileNetV1-0.25 in int8: examples/mobilenet_vww.py quantized
post-training by specializer.quant.quantize (per-channel int8 conv and depthwise weights,
per-tensor dense, asymmetric int8 activations, relu folded into the clamps) with min/max
calibration over 16 images of the float example's distribution at a fixed seed. Once captured,
its 27 convolutions, the global average pool and the dense layer are CMSIS-NN calls. Input and
output quantization: mobilenet_vww_int8.inputs["x"], mobilenet_vww_int8.outputs[0]."""
import numpy as np
from mobilenet_vww import mobilenet_vww

from specializer.quant.ptq import quantize

_cal = np.random.default_rng(10)
_calibration = [{"x": _cal.uniform(0, 1, size=(1, 96, 96, 3)).astype(np.float32)} for _ in range(16)]
mobilenet_vww_int8, _params = quantize(mobilenet_vww, mobilenet_vww.weights, _calibration,
                                       name="mobilenet_vww_int8")
mobilenet_vww_int8.example_inputs = {
    "x": mobilenet_vww_int8.inputs["x"].quantize(mobilenet_vww.example_inputs["x"])}
mobilenet_vww_int8.weights = _params
