"""How capture sees the int8 blocks: each as ONE opaque op, so it can become one CMSIS-NN call.

XLA's fusion passes merge a block's integer code with its neighbours' (a convolution's
requantization lands in the next block's padding kernel), so a block's output is often never
a buffer of its own and the block cannot be cut out of XLA's kernels afterwards. Inside
`emit_calls()` (capture's worker traces the model a second time in it, for XLA's dump only;
JAX's reference outputs come from the ordinary trace) a block CMSIS-NN can run is traced as a
custom call instead: target "cmsis_nn.<op>", backend_config = the block's scope name
(`cmsis_nn.<op>.<digest>`, also in the op_name metadata), operands = the block's own inputs,
result = its int8 (16x8 scheme: int16) output. XLA keeps it as a custom-call thunk over exactly those buffers,
which capture (specializer/capture/cmsis_calls.py) turns into the CMSIS-NN call. The executable
compiled this way is never run: the registered handler does nothing.

A block CMSIS-NN cannot run exactly (`unsupported()` says why) stays plain JAX, so XLA's code
computes it; capture logs the reason.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager

import jax
import jax.numpy as jnp

from specializer.quant.params import (AddParams, ConvParams, DepthwiseParams, FullyConnectedParams, LstmParams,
                                      MulParams, PoolParams, SigmoidLikeS16Params, SoftmaxParams, SoftmaxS16Params,
                                      SubParams, SvdfParams, TransposeConvParams)

TARGET_PREFIX = "cmsis_nn."
# XLA's legacy custom-call ABI (void fn(void *out, const void **in)): the only kind a handler
# without XLA's FFI headers can register; the handler never runs
_API_VERSION = 1
_HANDLER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_handler = _HANDLER_TYPE(lambda out, ins: None)
_registered: set[str] = set()
_active = False
_kept: dict[str, str] = {}  # scope -> why the block stays XLA's code


def active() -> bool:
    return _active


def kept() -> dict[str, str]:
    """Blocks traced inside emit_calls() that stayed plain JAX: scope -> reason."""
    return dict(sorted(_kept.items()))


@contextmanager
def emit_calls():
    global _active
    _active = True
    try:
        yield
    finally:
        _active = False


def unsupported(p) -> str | None:
    """Why CMSIS-NN's function for block p cannot compute it exactly (None: it can)."""
    if isinstance(p, (ConvParams, DepthwiseParams)) and p.dilation != (1, 1) and p.activation_bits == 8:
        return "dilation (capture's s8 calls pass CMSIS-NN a dilation of 1)"
    if isinstance(p, ConvParams):
        if p.input_dims[3] != p.filter_dims[3]:
            return "grouped convolution"
        return None
    if isinstance(p, (DepthwiseParams, TransposeConvParams, SvdfParams, LstmParams)):
        return None
    if isinstance(p, FullyConnectedParams):
        if p.activation_bits == 16 and p.bias_bits == 32:
            return "an int32 bias (arm_fully_connected_s16 takes an int64 one)"
        if len(p.multipliers) != 1:
            return f"per-channel requantization (arm_{p.op} takes one multiplier and shift per tensor)"
        return None
    if isinstance(p, SubParams):  # before AddParams, its base
        return "no CMSIS-NN subtract (v7.0.0 has arm_elementwise_add_s8 and _s16 only)"
    if isinstance(p, MulParams) and p.shape_2 is not None and tuple(p.shape_2) != tuple(p.shape):
        return f"broadcasting (arm_{p.op} takes two tensors of one shape)"
    if isinstance(p, (PoolParams, AddParams, MulParams, SoftmaxParams, SoftmaxS16Params)):
        # their parameter checks (params.py) already keep them inside what the s8 functions
        # compute exactly: windows that cover a pixel, left_shift >= 16, rows of <= 511; an int16
        # softmax's shift <= 15
        return None
    if isinstance(p, SigmoidLikeS16Params):
        if p.cmsis_left_shift is None:
            return (f"input multiplier {p.input_multiplier} is not 3 x a power of two (arm_nn_activation_s16 "
                    "takes a shift only)")
        return None
    return f"no CMSIS-NN lowering for {type(p).__name__}"


def _target(op: str) -> str:
    name = TARGET_PREFIX + op
    if name not in _registered:
        capsule = jax.ffi.pycapsule(ctypes.cast(_handler, ctypes.c_void_p).value)
        jax.ffi.register_ffi_target(name, capsule, platform="cpu", api_version=0)
        _registered.add(name)
    return name


def _lowerable(p) -> bool:
    """emit_calls() is on and CMSIS-NN can run block p (else why not is kept for the log)."""
    if not _active:
        return False
    why = unsupported(p)
    if why is not None:
        _kept[p.scope] = why
        return False
    return True


def call(p, out_shape, *operands):
    """The block as one custom call when emit_calls() is on and CMSIS-NN can run it; None
    otherwise (the caller then computes it in JAX)."""
    if not _lowerable(p):
        return None
    scope = p.scope
    out_type = jnp.int16 if getattr(p, "activation_bits", 8) == 16 or getattr(p, "output_bits", 8) == 16 else jnp.int8
    with jax.named_scope(scope):
        return jax.ffi.ffi_call(_target(p.op), jax.ShapeDtypeStruct(tuple(out_shape), out_type),
                                custom_call_api_version=_API_VERSION,
                                legacy_backend_config=scope)(*operands)


def call_with_state(p, out_shape, operands, state_index: int):
    """A block that also updates a state (SVDF): one custom call with two results, the int8
    output and the new state, the state result aliased to operand `state_index` -- the CMSIS-NN
    function updates its state in place, so XLA hands it one buffer holding the old state (a
    copy where the operand is a constant or still needed) that the call overwrites. None when
    emit_calls() is off or CMSIS-NN cannot run the block."""
    if not _lowerable(p):
        return None
    state = operands[state_index]
    with jax.named_scope(p.scope):
        return jax.ffi.ffi_call(_target(p.op), (jax.ShapeDtypeStruct(tuple(out_shape), jnp.int8),
                                                jax.ShapeDtypeStruct(state.shape, state.dtype)),
                                input_output_aliases={state_index: 1}, custom_call_api_version=_API_VERSION,
                                legacy_backend_config=p.scope)(*operands)
