"""The CMSIS-NN API captured models and libjit call, written once.

Capture writes CMSIS-NN calls into model.ll (specializer/capture/cmsis_calls.py) before any CMSIS-NN
is chosen: the calls, the constant structs they point at and the scratch sizes are those of
ONE API, CMSIS-NN v7.0.0's, which the shim implements. The tables below declare it: each
function with its parameters, each struct capture writes with its fields, by name and C type.
Everything else is derived from them: capture's call arguments and constant structs, given
by name (`call_args`, `struct_const`); the byte layout on Cortex-M4 (`layout`); and the check a
checkout must pass (cmsis_checkout.py).
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = "v7.0.0"

_DIMS = "const cmsis_nn_dims *"
_S8 = "const int8_t *"
_S16 = "const int16_t *"
_CTX = ("const cmsis_nn_context *", "ctx")


@dataclass(frozen=True)
class Function:
    name: str
    ret: str
    params: tuple[tuple[str, str], ...]  # (C type, parameter name as CMSIS-NN's header has it)

    def prototype(self) -> str:
        return f"{self.name}({', '.join(n for _, n in self.params)})"


def _layer(params_type: str, quant_type: str) -> tuple[tuple[str, str], ...]:
    params = params_type.removeprefix("cmsis_nn_")
    return (_CTX, (f"const {params_type} *", params), (f"const {quant_type} *", "quant_params"),
            (_DIMS, "input_dims"), (_S8, "input_data"), (_DIMS, "filter_dims"), (_S8, "filter_data"),
            (_DIMS, "bias_dims"), ("const int32_t *", "bias_data"))  # fmt: skip


_OUT = ((_DIMS, "output_dims"), ("int8_t *", "output_data"))
_POOL = (_CTX, ("const cmsis_nn_pool_params *", "pool_params"), (_DIMS, "input_dims"), (_S8, "input_data"),
         (_DIMS, "filter_dims")) + _OUT  # fmt: skip


def _i32(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple(("const int32_t", n) for n in names)


_STATUS = "arm_cmsis_nn_status"


def _layer_s16(params_type: str, quant_type: str, bias_type: str) -> tuple[tuple[str, str], ...]:
    """An int16-activation layer's parameters: _layer's with int16 input and output and its own bias type."""
    s8 = _layer(params_type, quant_type)
    return (s8[:4] + ((_S16, "input_data"),) + s8[5:8] + ((bias_type, "bias_data"), (_DIMS, "output_dims"),
                                                         ("int16_t *", "output_data")))


_CONV = _layer("cmsis_nn_conv_params", "cmsis_nn_per_channel_quant_params") + _OUT
_DW = _layer("cmsis_nn_dw_conv_params", "cmsis_nn_per_channel_quant_params") + _OUT
_CONV_SIZE = (("const cmsis_nn_conv_params *", "conv_params"), (_DIMS, "input_dims"), (_DIMS, "filter_dims"),
              (_DIMS, "output_dims"))
_DW_SIZE = (("const cmsis_nn_dw_conv_params *", "dw_conv_params"),) + _CONV_SIZE[1:]
_TCONV_PARAMS = ("const cmsis_nn_transpose_conv_params *", "transpose_conv_params")
_TCONV = (_CTX, ("const cmsis_nn_context *", "output_ctx")) + \
    _layer("cmsis_nn_transpose_conv_params", "cmsis_nn_per_channel_quant_params")[1:] + _OUT

# Every CMSIS-NN function a captured model or libjit's own kernels call, as v7.0.0 declares it.
# Capture calls the two wrappers (as TFLite Micro does) and, where the form a wrapper picks is
# not exact for a block, arm_convolve_s8 / arm_depthwise_conv_s8 (cmsis_calls.py); the forms the
# wrappers pick and their buffer sizes are listed too: the shim implements them and a
# checkout must declare them as v7.0.0 does.
FUNCTIONS = (
    Function("arm_convolve_wrapper_s8", _STATUS, _CONV),
    Function("arm_convolve_wrapper_s8_get_buffer_size", "int32_t", _CONV_SIZE),
    Function("arm_convolve_wrapper_s8_get_buffer_size_dsp", "int32_t", _CONV_SIZE),
    Function("arm_convolve_1x1_s8_fast", _STATUS, _CONV),
    Function("arm_convolve_1x1_s8_fast_get_buffer_size", "int32_t", ((_DIMS, "input_dims"),)),
    Function("arm_convolve_1x1_s8", _STATUS, _CONV),
    Function("arm_convolve_1_x_n_s8", _STATUS, _CONV),
    Function("arm_convolve_1_x_n_s8_get_buffer_size", "int32_t", _CONV_SIZE),
    Function("arm_convolve_s8", _STATUS, _CONV[:9] + ((_DIMS, "upscale_dims"),) + _OUT),
    Function("arm_convolve_s8_get_buffer_size", "int32_t", ((_DIMS, "input_dims"), (_DIMS, "filter_dims"))),
    Function("arm_depthwise_conv_wrapper_s8", _STATUS, _DW),
    Function("arm_depthwise_conv_wrapper_s8_get_buffer_size", "int32_t", _DW_SIZE),
    Function("arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp", "int32_t", _DW_SIZE),
    Function("arm_depthwise_conv_3x3_s8", _STATUS, _DW),
    Function("arm_depthwise_conv_s8_opt", _STATUS, _DW),
    Function("arm_depthwise_conv_s8_opt_get_buffer_size", "int32_t", ((_DIMS, "input_dims"), (_DIMS, "filter_dims"))),
    Function("arm_depthwise_conv_s8", _STATUS, _DW),
    Function("arm_transpose_conv_s8", _STATUS, _TCONV),
    Function("arm_transpose_conv_s8_get_buffer_size", "int32_t",
             (_TCONV_PARAMS, (_DIMS, "input_dims"), (_DIMS, "filter_dims"), (_DIMS, "out_dims"))),
    Function("arm_svdf_state_s16_s8", _STATUS,
             (("const cmsis_nn_context *", "input_ctx"), ("const cmsis_nn_context *", "output_ctx"),
              ("const cmsis_nn_svdf_params *", "svdf_params"),
              ("const cmsis_nn_per_tensor_quant_params *", "input_quant_params"),
              ("const cmsis_nn_per_tensor_quant_params *", "output_quant_params"), (_DIMS, "input_dims"),
              (_S8, "input_data"), (_DIMS, "state_dims"), ("int16_t *", "state_data"),
              (_DIMS, "weights_feature_dims"), (_S8, "weights_feature_data"), (_DIMS, "weights_time_dims"),
              ("const int16_t *", "weights_time_data"), (_DIMS, "bias_dims"), ("const int32_t *", "bias_data"))
             + _OUT),
    Function("arm_svdf_s8", _STATUS,
             (("const cmsis_nn_context *", "ctx"), ("const cmsis_nn_context *", "input_ctx"),
              ("const cmsis_nn_context *", "output_ctx"), ("const cmsis_nn_svdf_params *", "svdf_params"),
              ("const cmsis_nn_per_tensor_quant_params *", "input_quant_params"),
              ("const cmsis_nn_per_tensor_quant_params *", "output_quant_params"), (_DIMS, "input_dims"),
              (_S8, "input_data"), (_DIMS, "state_dims"), ("int8_t *", "state_data"),
              (_DIMS, "weights_feature_dims"), (_S8, "weights_feature_data"), (_DIMS, "weights_time_dims"),
              (_S8, "weights_time_data"), (_DIMS, "bias_dims"), ("const int32_t *", "bias_data"))
             + _OUT),
    Function("arm_svdf_s8_get_buffer_size", "int32_t", ((_DIMS, "filter_dims"),)),
    Function("arm_lstm_unidirectional_s8", _STATUS,
             ((_S8, "input"), ("int8_t *", "output"), ("const cmsis_nn_lstm_params *", "params"),
              ("cmsis_nn_lstm_context *", "buffers"))),
    Function("arm_fully_connected_s8", _STATUS,
             _layer("cmsis_nn_fc_params", "cmsis_nn_per_tensor_quant_params") + _OUT),
    Function("arm_fully_connected_s8_get_buffer_size", "int32_t", ((_DIMS, "filter_dims"),)),
    # int4 weights, packed two a byte (quantize(weight_bits=4)): the general functions
    Function("arm_convolve_s4", _STATUS, _CONV),
    Function("arm_convolve_s4_get_buffer_size", "int32_t", ((_DIMS, "input_dims"), (_DIMS, "filter_dims"))),
    Function("arm_depthwise_conv_s4", _STATUS,
             _DW[:4] + ((_S8, "input"), (_DIMS, "filter_dims"), (_S8, "kernel"), (_DIMS, "bias_dims"),
                        ("const int32_t *", "bias"), (_DIMS, "output_dims"), ("int8_t *", "output"))),
    Function("arm_fully_connected_s4", _STATUS,
             _layer("cmsis_nn_fc_params", "cmsis_nn_per_tensor_quant_params") + _OUT),
    # int16 activations, int8 weights ("16x8")
    Function("arm_convolve_s16", _STATUS, _layer_s16("cmsis_nn_conv_params", "cmsis_nn_per_channel_quant_params",
                                                     "const cmsis_nn_bias_data *")),
    Function("arm_convolve_s16_get_buffer_size", "int32_t", ((_DIMS, "input_dims"), (_DIMS, "filter_dims"))),
    Function("arm_depthwise_conv_s16", _STATUS, _layer_s16("cmsis_nn_dw_conv_params",
                                                           "cmsis_nn_per_channel_quant_params", "const int64_t *")),
    Function("arm_fully_connected_s16", _STATUS, _layer_s16("cmsis_nn_fc_params", "cmsis_nn_per_tensor_quant_params",
                                                            "const int64_t *")),
    Function("arm_fully_connected_s16_get_buffer_size", "int32_t", ((_DIMS, "filter_dims"),)),
    Function("arm_avgpool_s16", _STATUS, _POOL[:3] + ((_S16, "input_data"), (_DIMS, "filter_dims"),
                                                      (_DIMS, "output_dims"), ("int16_t *", "output_data"))),
    Function("arm_avgpool_s16_get_buffer_size", "int32_t", (("const int", "dim_dst_width"), ("const int", "ch_src"))),
    Function("arm_max_pool_s16", _STATUS, _POOL[:3] + ((_S16, "src"), (_DIMS, "filter_dims"), (_DIMS, "output_dims"),
                                                       ("int16_t *", "dst"))),
    Function("arm_elementwise_add_s16", _STATUS,
             ((_S16, "input_1_vect"), (_S16, "input_2_vect")) + _i32("input_1_offset", "input_1_mult",
             "input_1_shift", "input_2_offset", "input_2_mult", "input_2_shift", "left_shift")
             + (("int16_t *", "output"),)
             + _i32("out_offset", "out_mult", "out_shift", "out_activation_min", "out_activation_max", "block_size")),
    # the activation blocks (cmsis_calls_act.py)
    Function("arm_avgpool_s8", _STATUS, _POOL),
    Function("arm_avgpool_s8_get_buffer_size", "int32_t", (("const int", "dim_dst_width"), ("const int", "ch_src"))),
    Function("arm_max_pool_s8", _STATUS, _POOL),
    Function("arm_elementwise_add_s8", _STATUS,
             ((_S8, "input_1_vect"), (_S8, "input_2_vect")) + _i32("input_1_offset", "input_1_mult", "input_1_shift",
             "input_2_offset", "input_2_mult", "input_2_shift", "left_shift") + (("int8_t *", "output"),)
             + _i32("out_offset", "out_mult", "out_shift", "out_activation_min", "out_activation_max", "block_size")),
    Function("arm_elementwise_mul_s8", _STATUS,
             ((_S8, "input_1_vect"), (_S8, "input_2_vect")) + _i32("input_1_offset", "input_2_offset")
             + (("int8_t *", "output"),)
             + _i32("out_offset", "out_mult", "out_shift", "out_activation_min", "out_activation_max", "block_size")),
    Function("arm_elementwise_mul_s16", _STATUS,
             ((_S16, "input_1_vect"), (_S16, "input_2_vect")) + _i32("input_1_offset", "input_2_offset")
             + (("int16_t *", "output"),)
             + _i32("out_offset", "out_mult", "out_shift", "out_activation_min", "out_activation_max", "block_size")),
    Function("arm_softmax_s8", "void",
             ((_S8, "input"),) + _i32("num_rows", "row_size", "mult", "shift", "diff_min") + (("int8_t *", "output"),)),
    Function("arm_softmax_s8_s16", "void",
             ((_S8, "input"),) + _i32("num_rows", "row_size", "mult", "shift", "diff_min")
             + (("int16_t *", "output"),)),
    Function("arm_softmax_s16", _STATUS,
             ((_S16, "input"),) + _i32("num_rows", "row_size", "mult", "shift")
             + (("const cmsis_nn_softmax_lut_s16 *", "softmax_params"), ("int16_t *", "output"))),
    Function("arm_nn_activation_s16", _STATUS,
             ((_S16, "input"), ("int16_t *", "output")) + _i32("size", "left_shift")
             + (("const arm_nn_activation_type", "type"),)),
    Function("arm_nn_mat_mult_nt_t_s8_s32", _STATUS,
             ((_S8, "lhs"), (_S8, "rhs"), ("int32_t *", "dst"), ("const int32_t", "lhs_rows"),
              ("const int32_t", "rhs_rows"), ("const int32_t", "rhs_cols"), ("const int32_t", "lhs_offset"),
              ("const int32_t", "dst_idx_offset"))),
)  # fmt: skip
_FUNCTION = {f.name: f for f in FUNCTIONS}

_TILE = "cmsis_nn_tile"
ENUM = "arm_nn_activation_type"  # the one enum a struct field has (an int on Arm's ABI)
SIGMOID, TANH = 0, 1  # its values
BOOL = "const bool"  # cmsis_nn_bias_data's flag: one byte (AAPCS _Bool)
_ACT = ("cmsis_nn_activation", "activation")

# Every struct capture writes as a constant global, field by field as v7.0.0 declares it:
# (C type, field name) in declaration order. A struct a field nests comes before it.
STRUCTS = {
    "cmsis_nn_tile": (("int32_t", "w"), ("int32_t", "h")),
    "cmsis_nn_activation": (("int32_t", "min"), ("int32_t", "max")),
    "cmsis_nn_context": (("void *", "buf"), ("int32_t", "size")),
    "cmsis_nn_dims": (("int32_t", "n"), ("int32_t", "h"), ("int32_t", "w"), ("int32_t", "c")),
    "cmsis_nn_conv_params": (("int32_t", "input_offset"), ("int32_t", "output_offset"), (_TILE, "stride"),
                             (_TILE, "padding"), (_TILE, "dilation"), _ACT),
    "cmsis_nn_dw_conv_params": (("int32_t", "input_offset"), ("int32_t", "output_offset"), ("int32_t", "ch_mult"),
                                (_TILE, "stride"), (_TILE, "padding"), (_TILE, "dilation"), _ACT),
    "cmsis_nn_transpose_conv_params": (("int32_t", "input_offset"), ("int32_t", "output_offset"),
                                       (_TILE, "stride"), (_TILE, "padding"), (_TILE, "padding_offsets"),
                                       (_TILE, "dilation"), _ACT),
    "cmsis_nn_pool_params": ((_TILE, "stride"), (_TILE, "padding"), _ACT),
    "cmsis_nn_svdf_params": (("int32_t", "rank"), ("int32_t", "input_offset"), ("int32_t", "output_offset"),
                             ("cmsis_nn_activation", "input_activation"),
                             ("cmsis_nn_activation", "output_activation")),
    "cmsis_nn_fc_params": (("int32_t", "input_offset"), ("int32_t", "filter_offset"), ("int32_t", "output_offset"),
                           _ACT),
    "cmsis_nn_lstm_gate": (("int32_t", "input_multiplier"), ("int32_t", "input_shift"),
                           ("const void *", "input_weights"), ("const void *", "input_effective_bias"),
                           ("int32_t", "hidden_multiplier"), ("int32_t", "hidden_shift"),
                           ("const void *", "hidden_weights"), ("const void *", "hidden_effective_bias"),
                           ("const void *", "bias"), (ENUM, "activation_type")),
    "cmsis_nn_lstm_params": tuple(("int32_t", n) for n in (
        "time_major", "batch_size", "time_steps", "input_size", "hidden_size", "input_offset",
        "forget_to_cell_multiplier", "forget_to_cell_shift", "input_to_cell_multiplier", "input_to_cell_shift",
        "cell_clip", "cell_scale_power", "output_multiplier", "output_shift", "output_offset"))
    + tuple(("cmsis_nn_lstm_gate", g) for g in ("forget_gate", "input_gate", "cell_gate", "output_gate")),
    "cmsis_nn_lstm_context": (("void *", "temp1"), ("void *", "temp2"), ("void *", "cell_state")),
    "cmsis_nn_softmax_lut_s16": (("const int16_t *", "exp_lut"), ("const int16_t *", "one_by_one_lut")),
    "cmsis_nn_per_channel_quant_params": (("int32_t *", "multiplier"), ("int32_t *", "shift")),
    "cmsis_nn_per_tensor_quant_params": (("int32_t", "multiplier"), ("int32_t", "shift")),
    # arm_convolve_s16's bias: int64 values, or int32 ones when is_int32_bias (3 bytes of tail padding)
    "cmsis_nn_bias_data": (("const void *", "data"), (BOOL, "is_int32_bias")),
}  # fmt: skip


def _round_up(v: int, align: int) -> int:
    return -(-v // align) * align


def _size_align(ctype: str) -> tuple[int, int]:
    """sizeof and alignof on thumbv7em (AAPCS): a pointer, an int32_t and an enum (its values fit
    an int) are 4 and 4, a bool 1 and 1; a struct aligns as its widest field and its size rounds
    up to that."""
    if ctype.endswith("*") or ctype in ("int32_t", ENUM):
        return 4, 4
    if ctype == BOOL:
        return 1, 1
    if ctype not in STRUCTS:
        raise ValueError(f"cmsis_api: no size for C type {ctype!r} (give it one here)")
    fields = layout(ctype)
    align = max(_size_align(t)[1] for t, _, _ in fields)
    end = max(off + _size_align(t)[0] for t, _, off in fields)
    return _round_up(end, align), align


def layout(struct: str) -> list[tuple[str, str, int]]:
    """(C type, field name, byte offset) of each field of `struct`, in order."""
    out, off = [], 0
    for ctype, name in STRUCTS[struct]:
        size, align = _size_align(ctype)
        off = _round_up(off, align)
        out.append((ctype, name, off))
        off += size
    return out


def sizeof(struct: str) -> int:
    return _size_align(struct)[0]


def _by_name(what: str, declared: tuple[tuple[str, str], ...], given: dict) -> list:
    """(C type, value) of each declared (C type, name), in declared order, from `given` by name;
    a missing or unknown name raises TypeError."""
    names = [n for _, n in declared]
    if set(given) != set(names):
        missing, extra = sorted(set(names) - set(given)), sorted(set(given) - set(names))
        raise TypeError(f"{what}: missing {missing}, unknown {extra} (it has {names})")
    return [(ctype, given[n]) for ctype, n in declared]


def _words(struct: str, values: dict) -> list[tuple[str, str]]:
    """(LLVM type, LLVM value) of every scalar of `struct` in memory order, fields from `values`."""
    if not isinstance(values, dict):
        raise TypeError(f"{struct}: give its fields by name (a dict), not {values!r}")
    words = []
    for ctype, v in _by_name(struct, STRUCTS[struct], values):
        if ctype in STRUCTS:
            words += _words(ctype, v)
        elif ctype.endswith("*"):
            words.append(("ptr", "null" if v is None else v))
        elif ctype == BOOL:
            if v not in (0, 1):  # True / False or 1 / 0
                raise TypeError(f"{struct}: a bool field takes True or False (1 or 0), not {v!r}")
            words.append(("i8", str(int(v))))
        else:
            words.append(("i32", str(int(v))))
    return words


def _scalar_offsets(struct: str, base: int = 0) -> list[int]:
    """The C byte offset of every scalar of `struct`, in memory order."""
    out = []
    for ctype, _, off in layout(struct):
        out += _scalar_offsets(ctype, base + off) if ctype in STRUCTS else [base + off]
    return out


def struct_const(struct: str, **values) -> tuple[str, str]:
    """(LLVM type, LLVM initializer) of a constant `struct` given field by field: an int for an
    int32_t, a global's LLVM name ('@"x"', or '{scratch}') or None (null) for a pointer, a dict
    of its fields for a nested struct. A missing or unknown field raises TypeError.

    A bool is an i8 (True or False, 1 or 0). The flat LLVM type has the C layout (asserted: each scalar
    at its C offset, the same size); an all-int32 struct is an [N x i32], as model.ll has always
    had it."""
    words = _words(struct, values)
    size = {"i32": 4, "ptr": 4, "i8": 1}
    offsets, end = [], 0
    for t, _ in words:  # LLVM's natural layout: each scalar aligned to its size
        offsets.append(_round_up(end, size[t]))
        end = offsets[-1] + size[t]
    flat = _round_up(end, max(size[t] for t, _ in words))
    assert offsets == _scalar_offsets(struct) and flat == sizeof(struct), f"{struct}: flat LLVM layout differs from C's"
    if all(t == "i32" for t, _ in words):
        return f"[{len(words)} x i32]", "[" + ", ".join(f"i32 {v}" for _, v in words) + "]"
    return "{ " + ", ".join(t for t, _ in words) + " }", "{ " + ", ".join(f"{t} {v}" for t, v in words) + " }"


def call_args(function: str, **args) -> tuple:
    """The arguments of a call of `function`, given by parameter name, in parameter order. A
    missing or unknown parameter raises TypeError."""
    return tuple(v for _, v in _by_name(function, _FUNCTION[function].params, args))


def llvm_ret(function: str) -> str:
    """The LLVM return type of `function` (arm_cmsis_nn_status is an enum: an i32)."""
    return {"void": "void", "int32_t": "i32", _STATUS: "i32"}[_FUNCTION[function].ret]
