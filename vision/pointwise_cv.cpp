// TTMPointwise: 1x1 convolution as an OpenCV DNN layer, with the swish
// after it, the squeeze-excitation scale before it, and the residual
// addition and FiLM after it fused in. EfficientNet spends most of its
// arithmetic in these convolutions (the expansions and projections of the
// MBConv blocks and the head), and OpenCV 4.6 runs them as separate
// passes: the convolution, then the Scale of the excitation, then the
// Eltwise of the residual, then FiLM's two Scales. The backbone rewrites
// them into this layer (pointwiseConvs in onnxcheck_rewrite.go).
//
// Shapes: input x (N, K, H, W); optional scale s (N, K, 1, 1) (attribute
// scale = 1); optional residual r (N, M, H, W) (attribute residual = 1);
// optional FiLM multiplier g and shift f (N, M, 1, 1 each) (attribute
// film = 1) or the embedding e (N, D) they are computed from (attribute
// film = 2: g = e · Gᵀ + gb, f = e · Fᵀ + fb, with the constants G, gb,
// F, fb (M, D), (M), (M, D), (M) after the weights and bias; the layer
// computes them again only when e changes); weights (M, K, 1, 1), bias
// (M); output
//   y[m, p] = (act(bias[m] + sum_k w[m, k] * s[k] * x[k, p]) + r[m, p])
//             * g[m] + f[m]
// over the pixels p = 0 .. H*W-1, act swish or the identity (attribute
// activation).
//
// Method: y = W · (s ⊙ X) is a matrix product, M x K by K x P, P = H*W.
// The weights are packed once into panels of MR = 8 rows, k-major (panel
// q holds w[8q + i, k] at [k*8 + i]). A block of NR = 32 pixels of X is
// packed, scaled and zero-padded, into a K x 32 panel, and each 8 x 32
// tile of y is 16 AVX-512 accumulators over all of K, loaded with the bias
// and stored through masks with the swish and the residual applied. On a
// large map the work items are (pixel block, group of row panels), each
// packing its block; a map of at most 16 blocks is packed whole first and
// the items are row panels over all blocks, so the weights are read once.
// There are AVX-512F kernels and portable C++ (compiled with the package's
// flags); the backbone uses this layer only where the AVX-512 kernels run.
//
// TTMConv is the same layer for a k x k convolution with strides and pads
// (attributes kernel, strides, pads: top, left, bottom, right): the stem
// of EfficientNet, 3 input channels. The weights (M, C, kh, kw) are the
// matrix M x K with K = C*kh*kw, and packing gathers each pixel block's
// K x 32 receptive fields from the input (im2col), zeros in the padding.
// No scale or residual.
#include "pointwise_cv.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include "kernels_cv.h"
#include "layer_params_cv.h"

namespace {

constexpr int MR = 8;   // rows (output channels) of a tile
constexpr int NR = 32;  // columns (pixels) of a tile

// One tile's operands: rows x cols of y at y (row stride ldy), from the
// packed panel a (k x MR), the packed pixels b (k x NR) and the bias
// (MR values); r, if not null, is added after the activation (stride ldy);
// then, if g is not null, each row i is multiplied by g[i] and f[i] added.
struct tile {
    const float* a;
    const float* b;
    const float* bias;
    int k, rows, cols, ldy;
    float* y;
    const float* r;
    const float* g;
    const float* f;
    bool swish;
};

// The input and kernel of a TTMConv: C x H x W in, kh x kw kernel, strides,
// top and left pads, output width.
struct geometry {
    int c, h, w, kh, kw, sh, sw, pt, pl, wo;
};

struct pw_ops {
    // pack: b[p*NR + j] = x[p*ldx + j] * (s ? s[p] : 1) for j < cols, 0 for
    // cols <= j < NR, p < k.
    void (*pack)(float* b, const float* x, const float* s, int k, int ldx, int cols);
    // im2col is pack for TTMConv: b[p*NR + j] is the input under tap p =
    // (c*kh + ky)*kw + kx of output pixel n0 + j, 0 in the padding and for
    // j >= cols.
    void (*im2col)(float* b, const float* x, const geometry& g, int n0, int cols);
    void (*tile)(const tile& t);
};

void pack_generic(float* b, const float* x, const float* s, int k, int ldx, int cols) {
    for (int p = 0; p < k; p++) {
        const float sc = s ? s[p] : 1.f;
        const float* xr = x + (size_t)p * ldx;
        float* br = b + (size_t)p * NR;
        for (int j = 0; j < cols; j++) {
            br[j] = xr[j] * sc;
        }
        for (int j = cols; j < NR; j++) {
            br[j] = 0.f;
        }
    }
}

void im2col_generic(float* b, const float* x, const geometry& g, int n0, int cols) {
    int iy0[NR], ix0[NR];
    for (int j = 0; j < NR; j++) {
        const int o = n0 + std::min(j, cols - 1);
        iy0[j] = (o / g.wo) * g.sh - g.pt;
        ix0[j] = (o % g.wo) * g.sw - g.pl;
    }
    for (int c = 0; c < g.c; c++) {
        const float* xc = x + (size_t)c * g.h * g.w;
        for (int ky = 0; ky < g.kh; ky++) {
            for (int kx = 0; kx < g.kw; kx++, b += NR) {
                for (int j = 0; j < NR; j++) {
                    const int iy = iy0[j] + ky, ix = ix0[j] + kx;
                    b[j] = j < cols && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? xc[iy * g.w + ix] : 0.f;
                }
            }
        }
    }
}

void tile_generic(const tile& t) {
    float acc[MR][NR];
    for (int i = 0; i < MR; i++) {
        for (int j = 0; j < NR; j++) {
            acc[i][j] = t.bias[i];
        }
    }
    const float* a = t.a;
    const float* b = t.b;
    for (int p = 0; p < t.k; p++, a += MR, b += NR) {
        for (int i = 0; i < MR; i++) {
            const float ai = a[i];
            for (int j = 0; j < NR; j++) {
                acc[i][j] += ai * b[j];
            }
        }
    }
    for (int i = 0; i < t.rows; i++) {
        float* y = t.y + (size_t)i * t.ldy;
        if (t.swish) {
            ttm_swish(acc[i], acc[i], t.cols);
        }
        for (int j = 0; j < t.cols; j++) {
            const float v = acc[i][j] + (t.r ? t.r[(size_t)i * t.ldy + j] : 0.f);
            y[j] = t.g ? v * t.g[i] + t.f[i] : v;
        }
    }
}

#ifdef TTM_X86
// prefetch asks for the cache line at p in the L1 cache. The tile asks for
// its operands 16 terms (b, from L2) and 32 terms (a, the weights, from
// memory) ahead; the hardware's prefetchers alone leave B0's and B3's
// frames 4-5 % slower on an Intel Xeon (docs/results.md). p may be past
// the end of a buffer: a prefetch never faults.
inline void prefetch(const float* p) { _mm_prefetch((const char*)p, _MM_HINT_T0); }

__attribute__((target("avx512f"))) void pack_avx512(float* b, const float* x, const float* s, int k, int ldx,
                                                   int cols) {
    const __mmask16 m0 = lanes16(cols), m1 = lanes16(cols - 16);
    for (int p = 0; p < k; p++) {
        const __m512 sc = _mm512_set1_ps(s ? s[p] : 1.f);
        const float* xr = x + (size_t)p * ldx;
        _mm512_storeu_ps(b, _mm512_mul_ps(sc, _mm512_maskz_loadu_ps(m0, xr)));
        _mm512_storeu_ps(b + 16, _mm512_mul_ps(sc, _mm512_maskz_loadu_ps(m1, xr + 16)));
        b += NR;
    }
}

// im2col_avx512 gathers 16 pixels at a time, out-of-bounds lanes masked.
__attribute__((target("avx512f"))) void im2col_avx512(float* b, const float* x, const geometry& g, int n0,
                                                     int cols) {
    __m512i iy0[2], ix0[2];
    __mmask16 live[2];
    for (int h = 0; h < 2; h++) {
        live[h] = lanes16(cols - 16 * h);
        alignas(64) int iy[16], ix[16];
        for (int j = 0; j < 16; j++) {
            const int o = n0 + std::min(16 * h + j, cols - 1);
            iy[j] = (o / g.wo) * g.sh - g.pt;
            ix[j] = (o % g.wo) * g.sw - g.pl;
        }
        iy0[h] = _mm512_load_si512(iy);
        ix0[h] = _mm512_load_si512(ix);
    }
    const __m512i hmax = _mm512_set1_epi32(g.h), wmax = _mm512_set1_epi32(g.w), width = _mm512_set1_epi32(g.w);
    for (int ky = 0; ky < g.kh; ky++) {
        for (int kx = 0; kx < g.kw; kx++) {
            __mmask16 m[2];
            __m512i idx[2];
            for (int h = 0; h < 2; h++) {
                const __m512i iy = _mm512_add_epi32(iy0[h], _mm512_set1_epi32(ky));
                const __m512i ix = _mm512_add_epi32(ix0[h], _mm512_set1_epi32(kx));
                // Unsigned compares: negative coordinates are out too.
                m[h] = live[h] & _mm512_cmplt_epu32_mask(iy, hmax) & _mm512_cmplt_epu32_mask(ix, wmax);
                idx[h] = _mm512_add_epi32(_mm512_mullo_epi32(iy, width), ix);
            }
            for (int c = 0; c < g.c; c++) {
                const float* xc = x + (size_t)c * g.h * g.w;
                float* row = b + ((size_t)(c * g.kh + ky) * g.kw + kx) * NR;
                for (int h = 0; h < 2; h++) {
                    _mm512_storeu_ps(row + 16 * h,
                                     _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m[h], idx[h], xc, 4));
                }
            }
        }
    }
}

__attribute__((target("avx512f"))) void tile_avx512(const tile& t) {
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        c0[i] = c1[i] = _mm512_set1_ps(t.bias[i]);
    }
    const float* a = t.a;
    const float* b = t.b;
    for (int p = 0; p < t.k; p++, a += MR, b += NR) {
        prefetch(b + 16 * NR);
        prefetch(b + 16 * NR + 16);
        prefetch(a + 32 * MR);
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
    }
    const __mmask16 m0 = lanes16(t.cols), m1 = lanes16(t.cols - 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (i >= t.rows) {
            break;
        }
        __m512 v0 = c0[i], v1 = c1[i];
        if (t.swish) {
            v0 = swish16(v0);
            v1 = swish16(v1);
        }
        const size_t o = (size_t)i * t.ldy;
        if (t.r) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, t.r + o));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, t.r + o + 16));
        }
        if (t.g) {
            // A multiply, then an add, as OpenCV's Scale layers compute FiLM.
            const __m512 g = _mm512_set1_ps(t.g[i]), f = _mm512_set1_ps(t.f[i]);
            v0 = _mm512_add_ps(_mm512_mul_ps(v0, g), f);
            v1 = _mm512_add_ps(_mm512_mul_ps(v1, g), f);
        }
        _mm512_mask_storeu_ps(t.y + o, m0, v0);
        _mm512_mask_storeu_ps(t.y + o + 16, m1, v1);
    }
}
#endif

pw_ops ops_for(int isa) {
#ifdef TTM_X86
    if (isa == TTM_ISA_AVX512) {
        return pw_ops{pack_avx512, im2col_avx512, tile_avx512};
    }
#endif
    (void)isa;
    return pw_ops{pack_generic, im2col_generic, tile_generic};
}

// The packed pixel panel of each thread, grown as needed and kept: the
// layer allocates nothing once every thread has seen the largest K.
thread_local std::vector<float> tls_panel;

class PointwiseLayer CV_FINAL : public cv::dnn::Layer {
public:
    explicit PointwiseLayer(const cv::dnn::LayerParams& p) {
        setParamsFrom(p);
        film_ = p.get<int>("film", 0);
        const size_t gen = film_ == 2 ? 4 : 0;  // FiLM's generator: G, gb, F, fb
        if (film_ < 0 || film_ > 2) {
            TTM_LAYER_FAIL("attribute film " << film_ << "; have 0, 1 and 2");
        }
        if (blobs.size() != 1 + gen && blobs.size() != 2 + gen) {
            TTM_LAYER_FAIL("has " << blobs.size() << " constant inputs; it needs the weights (M, K, 1, 1), optionally the bias (M)"
                           << (gen ? ", then FiLM's G (M, D), gb (M), F (M, D), fb (M)" : ""));
        }
        bias_blob_ = blobs.size() == 2 + gen;
        const cv::Mat& wt = blobs[0];
        conv_ = type == "TTMConv";
        if (wt.dims != 4 || wt.type() != CV_32F || wt.size[0] < 1 || wt.size[1] < 1 ||
            (!conv_ && (wt.size[2] != 1 || wt.size[3] != 1))) {
            TTM_LAYER_FAIL("weights are not float32 " << (conv_ ? "(M, C, kh, kw)" : "(M, K, 1, 1)"));
        }
        m_ = wt.size[0];
        c_ = wt.size[1];
        if (conv_) {
            const std::string who = "TTMConv layer " + name;
            std::vector<int> k = ttm_layer_ints(p, who, "kernel", nullptr, 2, 1);
            std::vector<int> st = ttm_layer_ints(p, who, "strides", "stride", 2, 1);
            std::vector<int> pads = ttm_layer_ints(p, who, "pads", "pad", 4, 0);
            if (k[0] != wt.size[2] || k[1] != wt.size[3] || k[0] > max_kernel || k[1] > max_kernel) {
                TTM_LAYER_FAIL("kernel " << k[0] << "x" << k[1] << " does not match the weights or exceeds " << max_kernel);
            }
            if (std::min(st[0], st[1]) < 1 || std::max(st[0], st[1]) > max_kernel ||
                *std::min_element(pads.begin(), pads.end()) < 0 ||
                *std::max_element(pads.begin(), pads.end()) >= max_kernel) {
                TTM_LAYER_FAIL("strides or pads out of range");
            }
            g_ = geometry{c_, 0, 0, k[0], k[1], st[0], st[1], pads[0], pads[1], 0};
            pb_ = pads[2];
            pr_ = pads[3];
        }
        k_ = c_ * wt.size[2] * wt.size[3];
        if (bias_blob_ && (blobs[1].type() != CV_32F || (int)blobs[1].total() != m_)) {
            TTM_LAYER_FAIL("bias has " << blobs[1].total() << " values, want " << m_ << " float32");
        }
        if (gen) {
            const cv::Mat* g = &blobs[blobs.size() - 4];
            d_ = g[0].dims == 2 ? g[0].size[1] : 0;
            for (int i = 0; i < 4; i += 2) {
                if (g[i].type() != CV_32F || g[i].dims != 2 || g[i].size[0] != m_ || g[i].size[1] != d_ || d_ < 1 ||
                    g[i + 1].type() != CV_32F || (int)g[i + 1].total() != m_) {
                    TTM_LAYER_FAIL("FiLM's generator is not float32 (M, D), (M), (M, D), (M) with M = " << m_);
                }
            }
        }
        if (p.has("activation") && !p.get("activation").isString()) {
            TTM_LAYER_FAIL("attribute activation must be a string");
        }
        const std::string act = p.get<cv::String>("activation", "");
        if (act == "swish") {
            swish_ = true;
        } else if (act != "" && act != "none") {
            TTM_LAYER_FAIL("activation \"" << act << "\"; have \"swish\" and \"none\"");
        }
        scale_ = p.get<int>("scale", 0) != 0;
        residual_ = p.get<int>("residual", 0) != 0;
        if (conv_ && (scale_ || residual_ || film_)) {
            TTM_LAYER_FAIL("has no scale, residual or FiLM");
        }
        pack_weights();
    }

    static cv::Ptr<cv::dnn::Layer> create(cv::dnn::LayerParams& p) {
        return cv::Ptr<cv::dnn::Layer>(new PointwiseLayer(p));
    }

    bool supportBackend(int backendId) CV_OVERRIDE { return backendId == cv::dnn::DNN_BACKEND_OPENCV; }

    bool getMemoryShapes(const std::vector<cv::dnn::MatShape>& inputs, const int,
                         std::vector<cv::dnn::MatShape>& outputs,
                         std::vector<cv::dnn::MatShape>&) const CV_OVERRIDE {
        const size_t want = computed_inputs();
        if (inputs.size() != want) {
            TTM_LAYER_FAIL("has " << inputs.size() << " computed inputs, want " << want);
        }
        const cv::dnn::MatShape& in = inputs[0];
        if (in.size() != 4 || in[1] != c_) {
            TTM_LAYER_FAIL("input is not (N, " << c_ << ", H, W)");
        }
        cv::dnn::MatShape out{in[0], m_, in[2], in[3]};
        if (conv_) {
            out[2] = out_size(in[2], g_.kh, g_.sh, g_.pt, pb_);
            out[3] = out_size(in[3], g_.kw, g_.sw, g_.pl, pr_);
            if (out[2] < 1 || out[3] < 1) {
                TTM_LAYER_FAIL("input " << in[2] << "x" << in[3] << " is smaller than the kernel");
            }
        }
        if (scale_ && inputs[1] != cv::dnn::MatShape{in[0], k_, 1, 1}) {
            TTM_LAYER_FAIL("scale is not (N, " << k_ << ", 1, 1)");
        }
        if (residual_ && inputs[1 + scale_] != out) {
            TTM_LAYER_FAIL("residual is not (N, " << m_ << ", H, W)");
        }
        if (film_ == 1 && (inputs[want - 2] != cv::dnn::MatShape{in[0], m_, 1, 1} ||
                           inputs[want - 1] != cv::dnn::MatShape{in[0], m_, 1, 1})) {
            TTM_LAYER_FAIL("FiLM's multiplier and shift are not (N, " << m_ << ", 1, 1)");
        }
        if (film_ == 2 && inputs.back() != cv::dnn::MatShape{in[0], d_}) {
            TTM_LAYER_FAIL("FiLM's embedding is not (N, " << d_ << ")");
        }
        outputs.assign(1, out);
        return false;
    }

    void forward(cv::InputArrayOfArrays in_arr, cv::OutputArrayOfArrays out_arr,
                 cv::OutputArrayOfArrays) CV_OVERRIDE {
        std::vector<cv::Mat> inputs, outputs;
        in_arr.getMatVector(inputs);
        out_arr.getMatVector(outputs);
        CV_Assert(outputs.size() == 1 && inputs.size() == computed_inputs());
        for (size_t i = 0; i < inputs.size(); i++) {
            const cv::Mat& m = inputs[i];
            const bool embedding = film_ == 2 && i + 1 == inputs.size();
            CV_Assert(m.type() == CV_32F && m.isContinuous() &&
                      (embedding ? m.total() == (size_t)inputs[0].size[0] * d_ : m.dims == 4));
        }
        const cv::Mat& x = inputs[0];
        cv::Mat& y = outputs[0];
        geometry g = g_;
        g.h = x.size[2];
        g.w = x.size[3];
        g.wo = conv_ ? out_size(g.w, g.kw, g.sw, g.pl, pr_) : g.w;
        const int ho = conv_ ? out_size(g.h, g.kh, g.sh, g.pt, pb_) : g.h;
        CV_Assert(y.type() == CV_32F && y.isContinuous() && x.size[1] == c_ && y.size[1] == m_ &&
                  y.size[0] == x.size[0] && y.size[2] == ho && y.size[3] == g.wo);
        const int batch = x.size[0], pixels = ho * g.wo;
        const pw_ops ops = ops_for(ttm_current_isa());
        const int blocks = (pixels + NR - 1) / NR, panels = (m_ + MR - 1) / MR;
        const int threads = std::max(1, cv::getNumThreads());
        for (int n = 0; n < batch; n++) {
            const float* xn = x.ptr<float>() + (size_t)n * c_ * g.h * g.w;
            const float* sn = scale_ ? inputs[1].ptr<float>() + (size_t)n * k_ : nullptr;
            const float* rn = residual_ ? inputs[1 + scale_].ptr<float>() + (size_t)n * m_ * pixels : nullptr;
            const float* gn = nullptr;
            const float* fn = nullptr;
            if (film_ == 1) {
                gn = inputs[inputs.size() - 2].ptr<float>() + (size_t)n * m_;
                fn = inputs.back().ptr<float>() + (size_t)n * m_;
            } else if (film_ == 2) {
                film_coefficients(n, batch, inputs.back().ptr<float>() + (size_t)n * d_);
                gn = film_g_.data() + (size_t)n * m_;
                fn = film_f_.data() + (size_t)n * m_;
            }
            float* yn = y.ptr<float>() + (size_t)n * m_ * pixels;
            auto run = [&](int q, int blk, const float* b) {
                const int m0 = q * MR, n0 = blk * NR;
                const size_t o = (size_t)m0 * pixels + n0;
                ops.tile(tile{a_.data() + (size_t)q * k_ * MR, b, bias_.data() + m0, k_, std::min(MR, m_ - m0),
                              std::min(NR, pixels - n0), pixels, yn + o, rn ? rn + o : nullptr,
                              gn ? gn + m0 : nullptr, fn ? fn + m0 : nullptr, swish_});
            };
            auto pack = [&](float* b, int blk) {
                const int n0 = blk * NR, cols = std::min(NR, pixels - n0);
                if (conv_) {
                    ops.im2col(b, xn, g, n0, cols);
                } else {
                    ops.pack(b, xn + n0, sn, k_, pixels, cols);
                }
            };
            if (blocks <= max_shared_blocks) {
                // A small map: all its pixel blocks are packed once, and each
                // work item is one row panel over all of them, so every
                // weight is read once and the panels balance the threads.
                shared_.resize((size_t)blocks * k_ * NR);
                cv::parallel_for_(
                    cv::Range(0, blocks),
                    [&](const cv::Range& r) {
                        for (int blk = r.start; blk < r.end; blk++) {
                            pack(shared_.data() + (size_t)blk * k_ * NR, blk);
                        }
                    },
                    blocks);
                cv::parallel_for_(
                    cv::Range(0, panels),
                    [&](const cv::Range& r) {
                        for (int q = r.start; q < r.end; q++) {
                            for (int blk = 0; blk < blocks; blk++) {
                                run(q, blk, shared_.data() + (size_t)blk * k_ * NR);
                            }
                        }
                    },
                    panels);
                continue;
            }
            // A large map: each work item packs one pixel block, in a
            // thread's own buffer, and runs it through a group of row
            // panels; there are enough items to keep every thread busy.
            const int groups = std::min(panels, std::max(1, (4 * threads + blocks - 1) / blocks));
            const int items = blocks * groups;
            cv::parallel_for_(
                cv::Range(0, items),
                [&](const cv::Range& range) {
                    std::vector<float>& panel = tls_panel;
                    if (panel.size() < (size_t)k_ * NR) {
                        panel.resize((size_t)k_ * NR);
                    }
                    int packed = -1;
                    for (int it = range.start; it < range.end; it++) {
                        const int blk = it / groups, g = it % groups;
                        if (blk != packed) {
                            pack(panel.data(), blk);
                            packed = blk;
                        }
                        for (int q = g * panels / groups; q < (g + 1) * panels / groups; q++) {
                            run(q, blk, panel.data());
                        }
                    }
                },
                items);
        }
    }

private:
    static constexpr int max_kernel = 64;

    static int out_size(int n, int k, int s, int before, int after) {
        const int span = n + before + after - k;
        return span < 0 ? 0 : span / s + 1;
    }

    // computed_inputs is how many inputs the node reads besides its
    // constants: x, then the scale, the residual and FiLM's.
    size_t computed_inputs() const {
        return 1 + (scale_ ? 1 : 0) + (residual_ ? 1 : 0) + (film_ == 1 ? 2 : film_ == 2 ? 1 : 0);
    }

    // film_coefficients computes FiLM's multiplier and shift of batch item
    // n from its embedding e (D values) into film_g_ and film_f_, unless
    // they were computed from the same embedding before: an instruction's
    // embedding stays the same over many frames.
    void film_coefficients(int n, int batch, const float* e) {
        if (film_e_.size() != (size_t)batch * d_) {
            film_e_.assign((size_t)batch * d_, 0.f);
            film_g_.assign((size_t)batch * m_, 0.f);
            film_f_.assign((size_t)batch * m_, 0.f);
            film_valid_.assign(batch, 0);
        }
        float* last = film_e_.data() + (size_t)n * d_;
        if (film_valid_[n] && std::memcmp(last, e, sizeof(float) * d_) == 0) {
            return;
        }
        const cv::Mat* gen = &blobs[blobs.size() - 4];
        float* out[2] = {film_g_.data() + (size_t)n * m_, film_f_.data() + (size_t)n * m_};
        for (int j = 0; j < 2; j++) {
            const float* w = gen[2 * j].ptr<float>();
            const float* c = gen[2 * j + 1].ptr<float>();
            for (int m = 0; m < m_; m++) {
                out[j][m] = c[m] + ttm_dot(w + (size_t)m * d_, e, d_);
            }
        }
        std::memcpy(last, e, sizeof(float) * d_);
        film_valid_[n] = 1;
    }

    // pack_weights lays the weights out in k-major panels of MR rows and
    // pads the last panel and the bias with zeros.
    void pack_weights() {
        const int panels = (m_ + MR - 1) / MR;
        a_.assign((size_t)panels * k_ * MR, 0.f);
        bias_.assign((size_t)panels * MR, 0.f);
        const float* w = blobs[0].ptr<float>();
        for (int m = 0; m < m_; m++) {
            const int q = m / MR, i = m % MR;
            for (int k = 0; k < k_; k++) {
                a_[((size_t)q * k_ + k) * MR + i] = w[(size_t)m * k_ + k];
            }
            if (bias_blob_) {
                bias_[m] = blobs[1].ptr<float>()[m];
            }
        }
    }

    // Maps of at most this many pixel blocks are packed whole (shared_).
    static constexpr int max_shared_blocks = 16;

    int m_ = 0, c_ = 0, k_ = 0;  // K = C for 1x1, C*kh*kw for TTMConv
    bool swish_ = false, scale_ = false, residual_ = false, conv_ = false, bias_blob_ = false;
    int film_ = 0;  // 0: none; 1: multiplier and shift inputs; 2: the embedding
    int d_ = 0;     // the embedding's width with film 2
    // film 2: the embeddings the coefficients were last computed from, and
    // the coefficients, by batch item.
    std::vector<float> film_e_, film_g_, film_f_;
    std::vector<char> film_valid_;
    geometry g_{};  // TTMConv's kernel, strides, top and left pads
    int pb_ = 0, pr_ = 0;
    std::vector<float> a_, bias_;
    std::vector<float> shared_;  // the packed pixel blocks of a small map
};

}  // namespace

void ttm_register_pointwise() {
    cv::dnn::LayerFactory::registerLayer("TTMPointwise", PointwiseLayer::create);
    cv::dnn::LayerFactory::registerLayer("TTMConv", PointwiseLayer::create);
}
