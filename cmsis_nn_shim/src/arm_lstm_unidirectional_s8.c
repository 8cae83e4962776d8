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
            gate[b * hidden + n] = shim_activation_s16((int16_t)v, 0, g->activation_type);
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
            const int16_t th = shim_activation_s16(cell[k], p->cell_scale_power + 12, ARM_TANH);
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
