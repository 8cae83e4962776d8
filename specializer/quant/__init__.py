"""int8 models with TFLite's integer semantics, computed as CMSIS-NN computes them.

blocks      int8 building blocks (conv2d, depthwise_conv2d, fully_connected, avg_pool, max_pool,
            add, softmax), plain JAX on int8 arrays, each inside a `cmsis_nn.<op>` named scope
params      each block's static parameters (CMSIS-NN's dims, offsets, multipliers, shifts)
fixedpoint  CMSIS-NN's fixed-point arithmetic (requantize, ...) on int32, and quantize_multiplier
ptq         quantize(fn, params, calibration_inputs): float JAX model -> int8 model of blocks
"""
