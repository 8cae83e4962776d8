/*
 * TFLite's int16 sigmoid and tanh (cmsis_nn_shim): shim_activation_s16, one value, which
 * arm_nn_activation_s16 applies to a vector and arm_lstm_unidirectional_s8 to its gates (see
 * shim_nnfunctions.h and shim_nnsupportfunctions.h).
 *
 * The input times 3 << left_shift (or times 3 with a rounding right shift by -left_shift) is in
 * units of 1/(3 * 4096), so +-2^17 is +-10.7; TFLite's 256-entry table of sigmoid(k / 24) in 0.16
 * is interpolated over its low 9 bits (sigmoid) or 8 (tanh, as 2 sigmoid(2x) - 1), and the result
 * rounded to Q0.15 with the sign's symmetry.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* TFLite's sigmoid_table_uint16 (its values, not a rounding of the function: see
   specializer/quant/activations_s16.py, from which this copy is written) */
static const uint16_t sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535};

int16_t shim_activation_s16(int16_t x, int32_t left_shift, arm_nn_activation_type type)
{
    /* x * (3 << left_shift) wraps as TFLite's int32 product does where a shift is that large */
    const int32_t v = left_shift >= 0 ? (int32_t)((uint32_t)(int32_t)x * (3u << left_shift))
                                      : ((int32_t)x * 3 + (1 << (-left_shift - 1))) >> -left_shift;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t bits = type == ARM_SIGMOID ? 9 : 8;
    const uint32_t uh = a >> bits;
    uint32_t r;
    if (uh >= 255) {
        r = type == ARM_SIGMOID ? 0x7FFFu << 10 : 0xFFFFu << 8;
    } else {
        const uint32_t ua = sigmoid_table[uh], ub = sigmoid_table[uh + 1];
        r = (ua << bits) + (a & ((1u << bits) - 1u)) * (ub - ua);
    }
    if (type == ARM_SIGMOID) {
        r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
        return (int16_t)(r >> 10);
    }
    const int32_t t = v >= 0 ? (int32_t)r - (1 << 23) + (1 << 7) : -(int32_t)r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)(t >> 8);
}

arm_cmsis_nn_status arm_nn_activation_s16(const int16_t *input,
                                          int16_t *output,
                                          const int32_t size,
                                          const int32_t left_shift,
                                          const arm_nn_activation_type type)
{
    for (int32_t i = 0; i < size; i++) {
        output[i] = shim_activation_s16(input[i], left_shift, type);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
