"""MLPerf Tiny anomaly-detection autoencoder in int8: examples/anomaly_ae.py quantized post-training
by specializer.quant.quantize (TFLite's scheme: per-tensor int8 dense weights, int32 biases,
asymmetric int8 activations, relu folded into the clamps) with min/max calibration over 32
inputs of the float example's distribution at a fixed seed. Ten dense layers, each one
arm_fully_connected_s8 call once captured. Input and output quantization:
anomaly_ae_int8.inputs["x"], anomaly_ae_int8.outputs[0]."""
import numpy as np
from anomaly_ae import anomaly_ae

from specializer.quant.ptq import quantize

_cal = np.random.default_rng(8)
_calibration = [{"x": _cal.normal(size=(1, 640)).astype(np.float32)} for _ in range(32)]
anomaly_ae_int8, _params = quantize(anomaly_ae, anomaly_ae.weights, _calibration, name="anomaly_ae_int8")
anomaly_ae_int8.example_inputs = {"x": anomaly_ae_int8.inputs["x"].quantize(anomaly_ae.example_inputs["x"])}
anomaly_ae_int8.weights = _params
