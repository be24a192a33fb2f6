// The resampler's polyphase FIR for WebAssembly SIMD (compiled with logmel.c by build.sh).
// Resampler (resample.ts) builds the table of taps in JS; this is the inner loop: output o sits at
// input time o·down/up, takes row (o·down mod up) of the table and the `taps` input samples that
// start at floor(o·down/up) in the left-padded input. Rows are padded with zeros to a multiple of
// 4 taps, so the dot product is 4-wide with no remainder.
#include <stdint.h>

typedef float v4 __attribute__((vector_size(16), aligned(4)));
#define EXPORT __attribute__((visibility("default")))
#define LOAD(p) (*(const v4 *)(p))

EXPORT void fir_polyphase(const float *padded, int out_len, int up, int down, int row_taps, const float *table, float *out) {
  for (int o = 0; o < out_len; o++) {
    const int64_t num = (int64_t)o * down;
    const int64_t base = num / up;
    const int phase = (int)(num - base * up);
    const float *x = padded + base;
    const float *h = table + (int64_t)phase * row_taps;
    v4 a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= row_taps; i += 8) {
      a0 += LOAD(x + i) * LOAD(h + i);
      a1 += LOAD(x + i + 4) * LOAD(h + i + 4);
    }
    if (i < row_taps) a0 += LOAD(x + i) * LOAD(h + i);
    const v4 a = a0 + a1;
    out[o] = (a[0] + a[1]) + (a[2] + a[3]);
  }
}
