/*
 * arm_lstm_unidirectional_s8 (cmsis_nn_shim): TFLite's fully integer LSTM (int8 input and hidden
 * state, int16 cell state), as TFLite Micro's reference kernel computes it (see
 * shim_nnfunctions.h).
 *
 * Per step, with the hidden state h and cell state c of the step before (h at its zero point
 * and c at 0 before the first: the step skips the recurrent products then, which are 0):
 *   gate = sat16(sat16(rq(eff_x + W_x x)) + sat16(rq(eff_h + W_h h)))   (eff: effective biases)
 *   f, i, o = sigmoid(gate); g = tanh(cell gate)                           (int16, Q0.15)
 *   c = sat16(sat16(rq(f c)) + sat16(rq(i g))), clamped to +-cell_clip when cell_clip > 0
 *   h = clamp(rq(o tanh(c)) + output_offset, int8)
 * sigmoid and tanh are TFLite's int16 Logistic and Tanh: its 256-entry table of sigmoid(k / 24)
 * in 0.16, interpolated.
 */
#include <string.h>

#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* TFLite's sigmoid_table_uint16 (its values, not a rounding of the function: see
   specializer/quant/lstm.py, from which this copy is written) */
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

static int16_t lstm_sigmoid(int16_t x)
{
    const int32_t v = (int32_t)x * 3;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t uh = a >> 9;
    uint32_t r;
    if (uh >= 255)
    {
        r = 0x7FFFu << 10;
    }
    else
    {
        const uint32_t ua = sigmoid_table[uh], ub = sigmoid_table[uh + 1];
        r = (ua << 9) + (a & 0x1FFu) * (ub - ua);
    }
    r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int16_t)(r >> 10);
}

/* input at 2^(left_shift - 12): multiplier 3 << left_shift, or 3 and a rounding right shift */
static int16_t lstm_tanh(int16_t x, int32_t left_shift)
{
    int32_t v;
    if (left_shift >= 0)
    {
        v = (int32_t)x * (3 << left_shift);
    }
    else
    {
        const int32_t s = -left_shift;
        v = ((int32_t)x * 3 + (1 << (s - 1))) >> s;
    }
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t uh = a >> 8;
    int32_t r;
    if (uh >= 255)
    {
        r = 0xFFFF << 8;
    }
    else
    {
        const int32_t ua = sigmoid_table[uh], ub = sigmoid_table[uh + 1];
        r = (ua << 8) + (int32_t)(a & 0xFFu) * (ub - ua);
    }
    r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
    return (int16_t)(r >> 8);
}

static int32_t sat16(int32_t v)
{
    return MIN(MAX(v, -32768), 32767);
}

/* W [rows][cols] . x + eff, requantized, saturated to int16 */
static int32_t lstm_product(const int8_t *x, const int8_t *w, int32_t cols, int32_t eff, int32_t mult, int32_t shift)
{
    return sat16(arm_nn_requantize(shim_dot_s8(w, x, cols, 0, eff), mult, shift));
}

/* One gate for every batch: gate[b * hidden + n] */
static void lstm_gate(const int8_t *data_in, const int8_t *hidden_in, const cmsis_nn_lstm_gate *g,
                      const cmsis_nn_lstm_params *p, int16_t *gate, int32_t batch_offset)
{
    const int32_t hidden = p->hidden_size;
    const int8_t *wx = (const int8_t *)g->input_weights;
    const int8_t *wh = (const int8_t *)g->hidden_weights;
    const int32_t *bx = (const int32_t *)g->input_effective_bias;
    const int32_t *bh = (const int32_t *)g->hidden_effective_bias;
    for (int32_t b = 0; b < p->batch_size; b++)
    {
        const int8_t *x = data_in + b * batch_offset * p->input_size;
        const int8_t *h = hidden_in != NULL ? hidden_in + b * batch_offset * hidden : NULL;
        for (int32_t n = 0; n < hidden; n++)
        {
            int32_t v = lstm_product(x, wx + n * p->input_size, p->input_size, bx[n], g->input_multiplier,
                                     g->input_shift);
            if (h != NULL)
            {
                v = sat16(v + lstm_product(h, wh + n * hidden, hidden, bh[n], g->hidden_multiplier, g->hidden_shift));
            }
            gate[b * hidden + n] = g->activation_type == ARM_TANH ? lstm_tanh((int16_t)v, 0) : lstm_sigmoid((int16_t)v);
        }
    }
}

static void lstm_step(const int8_t *data_in, const int8_t *hidden_in, int8_t *hidden_out,
                      const cmsis_nn_lstm_params *p, cmsis_nn_lstm_context *buffers, int32_t batch_offset)
{
    int16_t *t1 = (int16_t *)buffers->temp1;
    int16_t *t2 = (int16_t *)buffers->temp2;
    int16_t *cell = (int16_t *)buffers->cell_state;
    const int32_t n = p->batch_size * p->hidden_size;
    /* a clip <= 0 is none (CMSIS-NN's reading): only the int16 saturation */
    const int32_t clip_lo = p->cell_clip > 0 ? -p->cell_clip : -32768;
    const int32_t clip_hi = p->cell_clip > 0 ? p->cell_clip : 32767;

    lstm_gate(data_in, hidden_in, &p->forget_gate, p, t1, batch_offset);
    for (int32_t k = 0; k < n; k++)
    {
        cell[k] = (int16_t)sat16(arm_nn_requantize((int32_t)t1[k] * cell[k], p->forget_to_cell_multiplier,
                                                   p->forget_to_cell_shift));
    }
    lstm_gate(data_in, hidden_in, &p->input_gate, p, t1, batch_offset);
    lstm_gate(data_in, hidden_in, &p->cell_gate, p, t2, batch_offset);
    for (int32_t k = 0; k < n; k++)
    {
        int32_t v = sat16(arm_nn_requantize((int32_t)t1[k] * t2[k], p->input_to_cell_multiplier,
                                            p->input_to_cell_shift));
        v = sat16(cell[k] + v);
        cell[k] = (int16_t)MIN(MAX(v, clip_lo), clip_hi);
    }
    lstm_gate(data_in, hidden_in, &p->output_gate, p, t1, batch_offset);
    for (int32_t b = 0; b < p->batch_size; b++)
    {
        for (int32_t j = 0; j < p->hidden_size; j++)
        {
            const int32_t k = b * p->hidden_size + j;
            const int16_t th = lstm_tanh(cell[k], p->cell_scale_power + 12);
            int32_t v = arm_nn_requantize((int32_t)th * t1[k], p->output_multiplier, p->output_shift) +
                p->output_offset;
            hidden_out[b * batch_offset * p->hidden_size + j] = (int8_t)MIN(MAX(v, -128), 127);
        }
    }
}

arm_cmsis_nn_status arm_lstm_unidirectional_s8(const int8_t *input,
                                               int8_t *output,
                                               const cmsis_nn_lstm_params *params,
                                               cmsis_nn_lstm_context *buffers)
{
    const int8_t *hidden_in = NULL;
    memset(buffers->cell_state, 0, (size_t)(params->batch_size * params->hidden_size) * sizeof(int16_t));
    /* time major: a step's batches side by side; else each batch's sequence side by side */
    const int32_t batch_offset = params->time_major ? 1 : params->time_steps;
    const int32_t step = params->time_major ? params->batch_size : 1;
    for (int32_t t = 0; t < params->time_steps; t++)
    {
        int8_t *hidden_out = output + t * step * params->hidden_size;
        lstm_step(input + t * step * params->input_size, hidden_in, hidden_out, params, buffers, batch_offset);
        hidden_in = hidden_out;
    }
    return ARM_CMSIS_NN_SUCCESS;
}
