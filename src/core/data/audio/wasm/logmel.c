// The log-mel hot loop for WebAssembly SIMD (compiled by build.sh into logmel.wasm.ts). MelExtractor
// (mel.ts) builds every table in JS, writes them into this module's memory and calls logmel() once
// per clip; the JS path in mel.ts computes the same thing and the tests hold the two together.
// Per frame: window + even/odd packing into bit-reversed order, an m = n_fft/2 point complex FFT
// (radix-2 DIT, stages fused in pairs as radix-2² butterflies over 4 lanes), the real-FFT split
// (Numerical Recipes §12.3) straight into magnitudes, the sparse mel filterbank, and log(max(x, floor)).
// Single precision, like librosa's STFT of float32 audio (complex64) and torch's.
#include <stdint.h>

typedef float v4 __attribute__((vector_size(16), aligned(4)));
typedef int32_t v4i __attribute__((vector_size(16), aligned(4)));

#define EXPORT __attribute__((visibility("default")))
#define LOAD(p) (*(const v4 *)(p))
#define STORE(p, v) (*(v4 *)(p) = (v))

static inline v4 splat(float x) { return (v4){x, x, x, x}; }
static inline v4 vsqrt(v4 x) { return __builtin_wasm_sqrt_f32x4(x); }
static inline v4 vmax(v4 a, v4 b) { return __builtin_wasm_pmax_f32x4(a, b); }
static inline v4 reverse(v4 x) { return __builtin_shufflevector(x, x, 3, 2, 1, 0); }

// Natural log of 4 positive normal floats: Cephes logf (S. Moshier, Cephes Math Library 2.2,
// logf.c): x = 2^e · f with f in [sqrt(1/2), sqrt(2)), then a degree-9 polynomial in f - 1; ~1 ulp.
static inline v4 vlog(v4 x) {
  v4i bits = (v4i)x;
  v4i e = ((bits >> 23) & 0xff) - 126;
  v4 f = (v4)((bits & 0x007fffff) | 0x3f000000); // in [0.5, 1)
  v4i small = f < splat(0.70710678118654752440f);
  e = e + small; // small lanes are -1
  v4 ef = __builtin_convertvector(e, v4);
  f = f + (v4)((v4i)f & small) - splat(1.0f); // f < sqrt(1/2): 2f - 1, else f - 1
  v4 z = f * f;
  v4 y = splat(7.0376836292E-2f);
  y = y * f + splat(-1.1514610310E-1f);
  y = y * f + splat(1.1676998740E-1f);
  y = y * f + splat(-1.2420140846E-1f);
  y = y * f + splat(1.4249322787E-1f);
  y = y * f + splat(-1.6668057665E-1f);
  y = y * f + splat(2.0000714765E-1f);
  y = y * f + splat(-2.4999993993E-1f);
  y = y * f + splat(3.3333331174E-1f);
  y = y * f * z;
  y = y + ef * splat(-2.12194440e-4f);
  y = y - splat(0.5f) * z;
  return f + y + ef * splat(0.693359375f);
}

EXPORT void log_f32(float *x, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) STORE(x + i, vlog(LOAD(x + i)));
  if (i < n) {
    float t[4] = {1, 1, 1, 1};
    for (int k = 0; i + k < n; k++) t[k] = x[i + k];
    v4 r = vlog(LOAD(t));
    for (int k = 0; i + k < n; k++) x[i + k] = r[k];
  }
}

// In-place complex FFT of m points (m a power of two >= 8) whose input is in bit-reversed order.
// Twiddles of the radix-2 stage with half-span h, e^{-iπj/h}, are at tw[h + j].
static void fft_complex(int m, float *re, float *im, const float *twr, const float *twi) {
  // Half-spans 1 and 2 fused: twiddles 1 and -i only.
  for (int k = 0; k < m; k += 4) {
    float ar = re[k], ai = im[k], br = re[k + 1], bi = im[k + 1];
    float cr = re[k + 2], ci = im[k + 2], dr = re[k + 3], di = im[k + 3];
    float s0r = ar + br, s0i = ai + bi, s1r = ar - br, s1i = ai - bi;
    float s2r = cr + dr, s2i = ci + di, s3r = cr - dr, s3i = ci - di;
    re[k] = s0r + s2r;
    im[k] = s0i + s2i;
    re[k + 2] = s0r - s2r;
    im[k + 2] = s0i - s2i;
    re[k + 1] = s1r + s3i;
    im[k + 1] = s1i - s3r;
    re[k + 3] = s1r - s3i;
    im[k + 3] = s1i + s3r;
  }
  int h = 4;
  for (; 4 * h <= m; h *= 4) {
    const int h2 = 2 * h;
    for (int base = 0; base < m; base += 4 * h) {
      for (int j = 0; j < h; j += 4) {
        const v4 w1r = LOAD(twr + h + j), w1i = LOAD(twi + h + j);
        const v4 w2r = LOAD(twr + h2 + j), w2i = LOAD(twi + h2 + j);
        float *ra = re + base + j, *ia = im + base + j;
        float *rb = ra + h, *ib = ia + h, *rc = rb + h, *ic = ib + h, *rd = rc + h, *id = ic + h;
        v4 xr = LOAD(rb), xi = LOAD(ib);
        v4 tr = xr * w1r - xi * w1i, ti = xr * w1i + xi * w1r;
        const v4 ar = LOAD(ra), ai = LOAD(ia);
        const v4 a1r = ar + tr, a1i = ai + ti, b1r = ar - tr, b1i = ai - ti;
        xr = LOAD(rd);
        xi = LOAD(id);
        tr = xr * w1r - xi * w1i;
        ti = xr * w1i + xi * w1r;
        const v4 cr = LOAD(rc), ci = LOAD(ic);
        const v4 c1r = cr + tr, c1i = ci + ti, d1r = cr - tr, d1i = ci - ti;
        tr = c1r * w2r - c1i * w2i;
        ti = c1r * w2i + c1i * w2r;
        STORE(ra, a1r + tr);
        STORE(ia, a1i + ti);
        STORE(rc, a1r - tr);
        STORE(ic, a1i - ti);
        const v4 ur = d1r * w2r - d1i * w2i, ui = d1r * w2i + d1i * w2r;
        STORE(rb, b1r + ui);
        STORE(ib, b1i - ur);
        STORE(rd, b1r - ui);
        STORE(id, b1i + ur);
      }
    }
  }
  if (2 * h <= m) {
    for (int j = 0; j < h; j += 4) {
      const v4 wr = LOAD(twr + h + j), wi = LOAD(twi + h + j);
      const v4 xr = LOAD(re + j + h), xi = LOAD(im + j + h);
      const v4 tr = xr * wr - xi * wi, ti = xr * wi + xi * wr;
      const v4 ar = LOAD(re + j), ai = LOAD(im + j);
      STORE(re + j + h, ar - tr);
      STORE(im + j + h, ai - ti);
      STORE(re + j, ar + tr);
      STORE(im + j, ai + ti);
    }
  }
}

// |X[k]| for k < used from Z, the packed complex FFT: X[k] = E + w^k·O with
// E = (Z[k] + conj Z[m-k])/2, O = (Z[k] - conj Z[m-k])/(2i), w = e^{-2πi/n_fft}.
static void split_magnitude(int m, int used, const float *zr, const float *zi, const float *wr, const float *wi, float *mag) {
  if (used > 0) {
    float x0 = zr[0] + zi[0];
    mag[0] = x0 < 0 ? -x0 : x0;
  }
  int upto = used < m ? used : m;
  int k = 1;
  for (; k + 4 <= upto; k += 4) {
    const v4 ar = LOAD(zr + k), ai = LOAD(zi + k);
    const v4 br = reverse(LOAD(zr + m - k - 3)), bi = -reverse(LOAD(zi + m - k - 3));
    const v4 er = (ar + br) * splat(0.5f), ei = (ai + bi) * splat(0.5f);
    const v4 dr = (ar - br) * splat(0.5f), di = (ai - bi) * splat(0.5f);
    const v4 cr = LOAD(wr + k), ci = LOAD(wi + k);
    const v4 pr = cr * dr - ci * di, pi = cr * di + ci * dr;
    const v4 xr = er + pi, xi = ei - pr;
    STORE(mag + k, vsqrt(xr * xr + xi * xi));
  }
  for (; k < upto; k++) {
    float ar = zr[k], ai = zi[k], br = zr[m - k], bi = -zi[m - k];
    float er = 0.5f * (ar + br), ei = 0.5f * (ai + bi), dr = 0.5f * (ar - br), di = 0.5f * (ai - bi);
    float pr = wr[k] * dr - wi[k] * di, pi = wr[k] * di + wi[k] * dr;
    float xr = er + pi, xi = ei - pr;
    mag[k] = __builtin_sqrtf(xr * xr + xi * xi);
  }
  if (used > m) {
    float xm = zr[0] - zi[0];
    mag[m] = xm < 0 ? -xm : xm;
  }
}

// The whole clip: `padded` holds the centre-padded signal, frame f starts at f·hop. Writes
// log(max(mel, floor))·log_scale as [frames, n_mels] into out.
EXPORT void logmel(int n_fft, int hop, int frames, int n_mels, int used, float floor, float log_scale,
                   const float *window, const int32_t *bitrev, const float *twr, const float *twi,
                   const float *split_r, const float *split_i, const int32_t *f_start, const int32_t *f_len,
                   const int32_t *f_off, const float *f_w, float *zr, float *zi, float *mag,
                   const float *padded, float *out) {
  const int m = n_fft >> 1;
  for (int f = 0; f < frames; f++) {
    const float *x = padded + (long)f * hop;
    for (int j = 0; j < m; j++) {
      const int r = bitrev[j];
      zr[r] = x[2 * j] * window[2 * j];
      zi[r] = x[2 * j + 1] * window[2 * j + 1];
    }
    fft_complex(m, zr, zi, twr, twi);
    split_magnitude(m, used, zr, zi, split_r, split_i, mag);
    float *o = out + (long)f * n_mels;
    for (int b = 0; b < n_mels; b++) {
      const float *w = f_w + f_off[b];
      const float *s = mag + f_start[b];
      const int len = f_len[b];
      v4 acc4 = splat(0);
      int j = 0;
      for (; j + 4 <= len; j += 4) acc4 += LOAD(w + j) * LOAD(s + j);
      float acc = (acc4[0] + acc4[1]) + (acc4[2] + acc4[3]);
      for (; j < len; j++) acc += w[j] * s[j];
      o[b] = acc;
    }
    int b = 0;
    for (; b + 4 <= n_mels; b += 4) STORE(o + b, vlog(vmax(LOAD(o + b), splat(floor))) * splat(log_scale));
    for (; b < n_mels; b++) {
      float t[4] = {o[b] > floor ? o[b] : floor, 1, 1, 1};
      o[b] = vlog(LOAD(t))[0] * log_scale;
    }
  }
}
