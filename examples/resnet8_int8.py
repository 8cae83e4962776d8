"""MLPerf Tiny ResNet-8 (CIFAR-10) in int8: examples/resnet8.py quantized post-training by
specializer.quant.quantize (per-channel int8 conv weights, per-tensor dense, asymmetric int8
activations, relu folded into the clamps, TFLite's int8 add for the residual joins) with min/max
calibration over 32 images of the float example's distribution at a fixed seed. Once captured,
its 9 convolutions, 3 residual adds, the global average pool and the dense layer are CMSIS-NN
calls. Input and output quantization: resnet8_int8.inputs["x"], resnet8_int8.outputs[0]."""
import numpy as np
from resnet8 import resnet8

from specializer.quant.ptq import quantize

_cal = np.random.default_rng(9)
_calibration = [{"x": _cal.uniform(0, 1, size=(1, 32, 32, 3)).astype(np.float32)} for _ in range(32)]
resnet8_int8, _params = quantize(resnet8, resnet8.weights, _calibration, name="resnet8_int8")
resnet8_int8.example_inputs = {"x": resnet8_int8.inputs["x"].quantize(resnet8.example_inputs["x"])}
resnet8_int8.weights = _params
