// Vectorised forms of the elementwise kernels of kernels.go, for cgo builds
// (vec_cgo.go). Each computes exactly what its Go form computes, operation
// for operation in float32 and in the same order, so results are equal bit
// for bit whichever runs: the compiler is asked not to fuse products and
// sums (fp-contract=off) nor to reorder them (no -ffast-math), and sums
// along a row stay sequential. What the vector units gain is the many
// elements at once: the loops here have no calls and no branches (but
// ttm_softmax_rows' rare subnormal pass), which GCC vectorises for each
// instruction set in target_clones and picks the best one for the running
// CPU at load time.
//
// The float32 constants are written in hex, as Go rounds its constant
// expressions (geluScale, 1.0/6, ...) to float32.

#include <math.h>
#include <stdint.h>
#include <string.h>

// The flags of the paragraph above, here since cgo's #cgo CFLAGS do not
// take them; -fno-trapping-math lets GCC compute both sides of a select
// (it changes no value, only whether FP exceptions are raised).
#pragma GCC optimize("O3", "fp-contract=off", "no-trapping-math")

#define TTM_VEC __attribute__((target_clones("avx512f", "avx2", "default")))

#define TTM_GELU_M2SCALE -0x1.988454p+00f // -2·sqrt(2/pi)
#define TTM_GELU_SCALE 0x1.988454p-01f    // sqrt(2/pi)
#define TTM_GELU_CUBIC 0x1.6e4e26p-05f    // 0.044715
#define TTM_GELU_CUBIC3 0x1.12ba9ep-03f   // 3·0.044715
#define TTM_GELU_TINY 0x1.4484cp-100f     // 1e-30
#define TTM_LOG2E 0x1.715476p+00f
#define TTM_LN2HI 0x1.62e4p-01f
#define TTM_LN2LO 0x1.7f7d1cp-20f
#define TTM_C6 0x1.555556p-03f    // 1/6
#define TTM_C24 0x1.555556p-05f   // 1/24
#define TTM_C120 0x1.111112p-07f  // 1/120
#define TTM_C720 0x1.6c16c2p-10f  // 1/720
#define TTM_C5040 0x1.a01a02p-13f // 1/5040

// ttm_exp is Exp32's fast path, for -87 <= a <= 88.
static inline float ttm_exp(float a) {
	float n = (float)(int32_t)(a * TTM_LOG2E + 128.5f) - 128.0f;
	float f = a - n * TTM_LN2HI - n * TTM_LN2LO;
	float p = 1.0f + f * (1.0f + f * (0.5f + f * (TTM_C6 + f * (TTM_C24 + f * (TTM_C120 + f * (TTM_C720 + f * TTM_C5040))))));
	uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
	float scale;
	memcpy(&scale, &bits, sizeof scale);
	return p * scale;
}

// ttm_gelu_forward is GELUForward: out[i] = gelu(in[i]). out may be in.
// The clamped exponents go through a block on the stack: in one loop
// with the clamp, GCC specialises the clamped cases into branches and
// then vectorises nothing.
TTM_VEC static void ttm_gelu_forward(float *out, const float *in, long n) {
	enum { block = 256 };
	float a[block];
	for (long lo = 0; lo < n; lo += block) {
		long m = n - lo < block ? n - lo : block;
		const float *x = in + lo;
		for (long i = 0; i < m; i++) {
			float v = TTM_GELU_M2SCALE * (x[i] + TTM_GELU_CUBIC * x[i] * x[i] * x[i]);
			v = v < -87.0f ? -87.0f : v;
			a[i] = v > 87.0f ? 87.0f : v;
		}
#pragma GCC ivdep
		for (long i = 0; i < m; i++) {
			out[lo + i] = x[i] / (1.0f + ttm_exp(a[i]));
		}
	}
}

// ttm_gelu_backward is GELUBackward: dIn[i] += dOut[i]·gelu'(in[i]), the
// sigmoid read from the forward output.
TTM_VEC static void ttm_gelu_backward(float *dIn, const float *dOut, const float *in, const float *out, long n) {
#pragma GCC ivdep
	for (long i = 0; i < n; i++) {
		float x = in[i];
		float s = (x > TTM_GELU_TINY || x < -TTM_GELU_TINY) ? out[i] / x : 0.5f;
		float du = TTM_GELU_SCALE * (1.0f + TTM_GELU_CUBIC3 * x * x);
		dIn[i] += dOut[i] * (s + 2.0f * x * s * (1.0f - s) * du);
	}
}

// ttm_softmax_rows is SoftmaxRowsForward over the rows x (n, k), k >= 1,
// bit for bit: an exponent below -104 (Go's ExpZeroBelow) is 0, as in Go,
// and one in [-104, -87), whose float32 exp is subnormal, is the double
// exp rounded to float32, which is what Go's float32(math.Exp) gives for
// every such float32 (TestSoftmaxRowsSubnormalExponents). It stops,
// leaving the row untouched, at the first row with a NaN exponent (a NaN
// in the row, or +Inf: Inf - Inf) and returns that row's index (n when
// all were done), for Go to finish it.
TTM_VEC static long ttm_softmax_rows(float *x, long n, long k) {
	for (long i = 0; i < n; i++) {
		float *r = x + i * k;
		float mx = r[0];
		for (long j = 1; j < k; j++) {
			mx = r[j] > mx ? r[j] : mx;
		}
		int inRange = 1, subnormal = 0;
		for (long j = 0; j < k; j++) {
			float d = r[j] - mx;
			inRange &= d <= 88.0f; // false for a NaN
			subnormal |= (d < -87.0f) & (d >= -104.0f);
		}
		if (!inRange) {
			return i;
		}
		// As in ttm_gelu_forward, the clamp goes through blocks on the
		// stack so that the exp loop stays vectorised.
		enum { block = 256 };
		float a[block], keep[block], dv[block];
		for (long lo = 0; lo < k; lo += block) {
			long m = k - lo < block ? k - lo : block;
			float *y = r + lo;
			for (long j = 0; j < m; j++) {
				float d = y[j] - mx;
				keep[j] = d < -87.0f ? 0.0f : 1.0f;
				a[j] = d < -87.0f ? -87.0f : d;
			}
			if (subnormal) {
				for (long j = 0; j < m; j++) {
					dv[j] = y[j] - mx;
				}
			}
#pragma GCC ivdep
			for (long j = 0; j < m; j++) {
				y[j] = ttm_exp(a[j]) * keep[j];
			}
			if (subnormal) {
				for (long j = 0; j < m; j++) {
					if (dv[j] < -87.0f && dv[j] >= -104.0f) {
						y[j] = (float)exp((double)dv[j]);
					}
				}
			}
		}
		float sum = 0.0f;
		for (long j = 0; j < k; j++) {
			sum += r[j];
		}
		float inv = 1.0f / sum;
		for (long j = 0; j < k; j++) {
			r[j] *= inv;
		}
	}
	return n;
}

// ttm_sum_rows is SumRows: out[j] += Σ_i x[i, j], x (n, c), in the order
// of i for each j.
TTM_VEC static void ttm_sum_rows(float *restrict out, const float *restrict x, long n, long c) {
	for (long i = 0; i < n; i++) {
		const float *row = x + i * c;
		for (long j = 0; j < c; j++) {
			out[j] += row[j];
		}
	}
}

// ttm_add is Add: dst[i] += src[i].
TTM_VEC static void ttm_add(float *restrict dst, const float *restrict src, long n) {
	for (long i = 0; i < n; i++) {
		dst[i] += src[i];
	}
}

// ttm_layernorm_forward is nn.LayerNormForward: each row of in (n, c)
// normalised into out, its mean and reciprocal deviation into mean and
// rstd unless NULL. The sums are the Go loop's (sums): per block of 64, four
// float32 partial sums of the columns j%4 (a block's last c%4 columns to
// the first), each block's added in double in block order. Four blocks at
// a time keep sixteen chains of additions independent.
TTM_VEC static void ttm_layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *scale,
					   const float *bias, long n, long c, float eps) {
	for (long i = 0; i < n; i++) {
		const float *x = in + i * c;
		float *y = out + i * c;
		double s = 0, sq = 0;
		long lo = 0;
		for (; lo + 256 <= c; lo += 256) {
			float ps[4][4] = {{0}}, pq[4][4] = {{0}};
			for (long j = 0; j < 64; j += 4) {
				for (int b = 0; b < 4; b++) {
					for (int l = 0; l < 4; l++) {
						float v = x[lo + b * 64 + j + l];
						ps[b][l] += v;
						pq[b][l] += v * v;
					}
				}
			}
			for (int b = 0; b < 4; b++) {
				s += (double)(ps[b][0] + ps[b][1]) + (double)(ps[b][2] + ps[b][3]);
				sq += (double)(pq[b][0] + pq[b][1]) + (double)(pq[b][2] + pq[b][3]);
			}
		}
		for (; lo < c; lo += 64) {
			long len = c - lo < 64 ? c - lo : 64, j = 0;
			float ps[4] = {0}, pq[4] = {0};
			for (; j + 4 <= len; j += 4) {
				for (int l = 0; l < 4; l++) {
					float v = x[lo + j + l];
					ps[l] += v;
					pq[l] += v * v;
				}
			}
			for (; j < len; j++) {
				float v = x[lo + j];
				ps[0] += v;
				pq[0] += v * v;
			}
			s += (double)(ps[0] + ps[1]) + (double)(ps[2] + ps[3]);
			sq += (double)(pq[0] + pq[1]) + (double)(pq[2] + pq[3]);
		}
		double mu = s / (double)c;
		double variance = sq / (double)c - mu * mu;
		if (variance < 0) {
			variance = 0;
		}
		float rs = (float)(1.0 / __builtin_sqrt(variance + (double)eps));
		float m = (float)mu;
#pragma GCC ivdep
		for (long j = 0; j < c; j++) {
			y[j] = (x[j] - m) * rs * scale[j] + bias[j];
		}
		if (mean) {
			mean[i] = m;
			rstd[i] = rs;
		}
	}
}

// ttm_layernorm_backward is nn.LayerNormBackward: the gradients of a
// LayerNorm of the rows of in (n, c) added to dIn, and to dScale and
// dBias unless NULL. The two row means are sums in column order.
TTM_VEC static void ttm_layernorm_backward(float *dIn, float *dScale, float *dBias, const float *dOut, const float *in,
					    const float *scale, const float *mean, const float *rstd, long n, long c) {
	for (long i = 0; i < n; i++) {
		const float *x = in + i * c, *dy = dOut + i * c;
		float *dx = dIn + i * c;
		float m = mean[i], rs = rstd[i];
		float dnormMean = 0.0f, dnormXhatMean = 0.0f;
		for (long j = 0; j < c; j++) {
			float xhat = (x[j] - m) * rs;
			float dnorm = dy[j] * scale[j];
			dnormMean += dnorm;
			dnormXhatMean += dnorm * xhat;
		}
		dnormMean /= (float)c;
		dnormXhatMean /= (float)c;
		if (dScale) {
			for (long j = 0; j < c; j++) {
				dScale[j] += dy[j] * ((x[j] - m) * rs);
			}
		}
		if (dBias) {
			for (long j = 0; j < c; j++) {
				dBias[j] += dy[j];
			}
		}
		for (long j = 0; j < c; j++) {
			float xhat = (x[j] - m) * rs;
			float dnorm = dy[j] * scale[j];
			dx[j] += (dnorm - dnormMean - xhat * dnormXhatMean) * rs;
		}
	}
}

// ttm_film_forward is vision.FiLMForward: out = x ⊙ (1 + gamma) + beta
// row by row, x, out (n, d). out may be x.
TTM_VEC static void ttm_film_forward(float *out, const float *x, const float *gamma, const float *beta, long n, long d) {
	for (long i = 0; i < n; i++) {
#pragma GCC ivdep
		for (long j = 0; j < d; j++) {
			out[i * d + j] = x[i * d + j] * (1.0f + gamma[j]) + beta[j];
		}
	}
}

// ttm_film_backward is vision.FiLMBackward but for dBeta (SumRows):
// dGamma += Σ_rows dOut ⊙ x in row order; dX += dOut ⊙ (1 + gamma)
// unless dX is NULL.
TTM_VEC static void ttm_film_backward(float *dX, float *restrict dGamma, const float *dOut, const float *x, const float *gamma, long n, long d) {
	for (long i = 0; i < n; i++) {
		const float *xr = x + i * d, *gr = dOut + i * d;
		for (long j = 0; j < d; j++) {
			dGamma[j] += gr[j] * xr[j];
		}
		if (dX) {
			float *dr = dX + i * d;
#pragma GCC ivdep
			for (long j = 0; j < d; j++) {
				dr[j] += gr[j] * (1.0f + gamma[j]);
			}
		}
	}
}

// ttm_unfold3x3 is vision.Unfold3x3Forward: each position's 3x3
// neighbourhood of feat (c, n; a grid width wide) into out (9c, n),
// zero beyond the edges.
TTM_VEC static void ttm_unfold3x3(float *restrict out, const float *restrict feat, long c, long n, long width) {
	long rows = n / width;
	for (int k = 0; k < 9; k++) {
		int dy = k / 3 - 1, dx = k % 3 - 1;
		for (long ch = 0; ch < c; ch++) {
			const float *src = feat + ch * n;
			float *dst = out + (k * c + ch) * n;
			for (long y = 0; y < rows; y++) {
				float *row = dst + y * width;
				long sy = y + dy;
				if (sy < 0 || sy >= rows) {
					memset(row, 0, width * sizeof *row);
					continue;
				}
				const float *from = src + sy * width;
				if (dx < 0) {
					row[0] = 0.0f;
					memcpy(row + 1, from, (width - 1) * sizeof *row);
				} else if (dx == 0) {
					memcpy(row, from, width * sizeof *row);
				} else {
					memcpy(row, from + 1, (width - 1) * sizeof *row);
					row[width - 1] = 0.0f;
				}
			}
		}
	}
}

// ttm_unfold3x3_backward is vision.Unfold3x3Backward: it adds the
// gradient of ttm_unfold3x3, dOut (9c, n), into dFeat (c, n), in the Go
// loop's order (tap by tap, so each element sums its nine terms in the
// same sequence).
TTM_VEC static void ttm_unfold3x3_backward(float *restrict dFeat, const float *restrict dOut, long c, long n, long width) {
	long rows = n / width;
	for (int k = 0; k < 9; k++) {
		int dy = k / 3 - 1, dx = k % 3 - 1;
		long x0 = dx < 0 ? 1 : 0, x1 = dx > 0 ? width - 1 : width;
		for (long ch = 0; ch < c; ch++) {
			float *dst = dFeat + ch * n;
			const float *src = dOut + (k * c + ch) * n;
			for (long y = 0; y < rows; y++) {
				long sy = y + dy;
				if (sy < 0 || sy >= rows) {
					continue;
				}
				float *to = dst + sy * width + dx;
				const float *from = src + y * width;
				for (long x = x0; x < x1; x++) {
					to[x] += from[x];
				}
			}
		}
	}
}

// ttm_keypoint_dlogits is the first half of vision.KeypointsBackward:
// for each channel j, dLogits[j, i] = q[j, i]·(dx_j·(gx_i - cx_j) +
// dy_j·(gy_i - cy_j)), q the readout (d, n), coords and dCoords (2d): x
// of every channel, then y.
TTM_VEC static void ttm_keypoint_dlogits(float *restrict dLogits, const float *restrict q, const float *gx, const float *gy,
					  const float *coords, const float *dCoords, long n, long d) {
	for (long j = 0; j < d; j++) {
		float dx = dCoords[j], dy = dCoords[d + j], cx = coords[j], cy = coords[d + j];
		const float *qr = q + j * n;
		float *row = dLogits + j * n;
		for (long i = 0; i < n; i++) {
			row[i] = qr[i] * (dx * (gx[i] - cx) + dy * (gy[i] - cy));
		}
	}
}

// ttm_keypoint_dx is the second half of vision.KeypointsBackward: the
// logits were s_j·x[i, j], so dX[i, j] += s_j·dLogits[j, i] and
// dLogScale_j += s_j·Σ_i dLogits[j, i]·x[i, j], the sum in double in the
// order of i. x, dX (n, d); dLogits (d, n); s, dLogScale (d).
TTM_VEC static void ttm_keypoint_dx(float *restrict dX, float *restrict dLogScale, const float *restrict dLogits, const float *restrict x,
				     const float *s, long n, long d) {
	for (long j = 0; j < d; j++) {
		const float *row = dLogits + j * n;
		float sj = s[j];
		double ds = 0;
		for (long i = 0; i < n; i++) {
			dX[i * d + j] += sj * row[i];
			ds += (double)(row[i] * x[i * d + j]);
		}
		dLogScale[j] += (float)ds * sj;
	}
}
