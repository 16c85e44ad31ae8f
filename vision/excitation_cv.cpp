// TTMExcitation: the gate of a squeeze-excitation block as one OpenCV DNN
// layer. From the channel means m (N, C, 1, 1) (the depthwise layer's
// second output) it computes
//   g = sigmoid(W2 · swish(W1 · m + b1) + b2)
// with W1 (R, C, 1, 1), b1 (R), W2 (C, R, 1, 1), b2 (C): two small
// matrix-vector products that OpenCV ran as two Convolution layers over a
// 1x1 map and a TTMSwish, each with its own dispatch. The output (N, C,
// 1, 1) is the scale the TTMPointwise projection reads.
//
// About 2·R·C multiply-adds (at most a few hundred thousand in
// EfficientNet-B3). A narrow gate runs on the calling thread, which costs
// less than waking a second one. A wide one (B0's last stages: 0.4 MB of
// weights) waits on memory more than on arithmetic, and shares its rows
// out over OpenCV's threads: B3's gates 1.16 to 0.88 ms a frame, B0's
// 0.41 to 0.32 ms, on the Intel Xeon of docs/results.md.
#include "excitation_cv.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include "kernels_cv.h"
#include "layer_params_cv.h"

namespace {

// sigmoid sets x[i] = 1 / (1 + exp(-x[i])).
void sigmoid_generic(float* x, int n) {
    for (int i = 0; i < n; i++) {
        x[i] = 1.f / (1.f + std::exp(-x[i]));
    }
}

#ifdef TTM_X86
__attribute__((target("avx512f"))) void sigmoid_avx512(float* x, int n) {
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16(n - i);
        _mm512_mask_storeu_ps(x + i, m, sigmoid16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}
#endif

struct ex_ops {
    void (*swish)(const float* src, float* dst, int n);
    void (*sigmoid)(float* x, int n);
};

ex_ops ops_for(int isa) {
#ifdef TTM_X86
    if (isa == TTM_ISA_AVX512) {
        return ex_ops{ttm_swish_fast, sigmoid_avx512};
    }
#endif
    (void)isa;
    return ex_ops{ttm_swish, sigmoid_generic};
}

thread_local std::vector<float> tls_hidden;

class ExcitationLayer CV_FINAL : public cv::dnn::Layer {
public:
    explicit ExcitationLayer(const cv::dnn::LayerParams& p) {
        setParamsFrom(p);
        if (blobs.size() != 4) {
            TTM_LAYER_FAIL("has " << blobs.size() << " constant inputs, want W1 (R, C, 1, 1), b1 (R), W2 (C, R, 1, 1), b2 (C)");
        }
        const cv::Mat &w1 = blobs[0], &b1 = blobs[1], &w2 = blobs[2], &b2 = blobs[3];
        for (const cv::Mat& b : blobs) {
            if (b.type() != CV_32F || !b.isContinuous()) {
                TTM_LAYER_FAIL("constants must be float32");
            }
        }
        if (w1.dims != 4 || w1.size[2] != 1 || w1.size[3] != 1 || w1.size[0] < 1 || w1.size[1] < 1) {
            TTM_LAYER_FAIL("W1 is not (R, C, 1, 1)");
        }
        r_ = w1.size[0];
        c_ = w1.size[1];
        if (w2.dims != 4 || w2.size[0] != c_ || w2.size[1] != r_ || w2.size[2] != 1 || w2.size[3] != 1) {
            TTM_LAYER_FAIL("W2 is not (" << c_ << ", " << r_ << ", 1, 1)");
        }
        if ((int)b1.total() != r_ || (int)b2.total() != c_) {
            TTM_LAYER_FAIL("biases have " << b1.total() << " and " << b2.total() << " values, want " << r_ << " and " << c_);
        }
    }

    static cv::Ptr<cv::dnn::Layer> create(cv::dnn::LayerParams& p) {
        return cv::Ptr<cv::dnn::Layer>(new ExcitationLayer(p));
    }

    bool supportBackend(int backendId) CV_OVERRIDE { return backendId == cv::dnn::DNN_BACKEND_OPENCV; }

    bool getMemoryShapes(const std::vector<cv::dnn::MatShape>& inputs, const int,
                         std::vector<cv::dnn::MatShape>& outputs,
                         std::vector<cv::dnn::MatShape>&) const CV_OVERRIDE {
        if (inputs.size() != 1 || inputs[0].size() != 4 || inputs[0][1] != c_ || inputs[0][2] != 1 ||
            inputs[0][3] != 1) {
            TTM_LAYER_FAIL("input is not one (N, " << c_ << ", 1, 1)");
        }
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(cv::InputArrayOfArrays in_arr, cv::OutputArrayOfArrays out_arr,
                 cv::OutputArrayOfArrays) CV_OVERRIDE {
        std::vector<cv::Mat> inputs, outputs;
        in_arr.getMatVector(inputs);
        out_arr.getMatVector(outputs);
        CV_Assert(inputs.size() == 1 && outputs.size() == 1 && inputs[0].type() == CV_32F &&
                  outputs[0].type() == CV_32F && inputs[0].isContinuous() && outputs[0].isContinuous() &&
                  (int)inputs[0].total() == (int)outputs[0].total() && (int)inputs[0].total() % c_ == 0);
        const ex_ops ops = ops_for(ttm_current_isa());
        std::vector<float>& h = tls_hidden;
        h.resize(r_);
        const float *w1 = blobs[0].ptr<float>(), *b1 = blobs[1].ptr<float>();
        const float *w2 = blobs[2].ptr<float>(), *b2 = blobs[3].ptr<float>();
        const int batch = (int)inputs[0].total() / c_;
        const int threads = (size_t)r_ * c_ >= parallel_weights ? cv::getNumThreads() : 1;
        for (int n = 0; n < batch; n++) {
            const float* m = inputs[0].ptr<float>() + (size_t)n * c_;
            float* g = outputs[0].ptr<float>() + (size_t)n * c_;
            float* hn = h.data();
            rows(threads, r_, [&](int lo, int hi) {
                for (int i = lo; i < hi; i++) {
                    hn[i] = b1[i] + ttm_dot(w1 + (size_t)i * c_, m, c_);
                }
                ops.swish(hn + lo, hn + lo, hi - lo);
            });
            rows(threads, c_, [&](int lo, int hi) {
                for (int i = lo; i < hi; i++) {
                    g[i] = b2[i] + ttm_dot(w2 + (size_t)i * r_, hn, r_);
                }
                ops.sigmoid(g + lo, hi - lo);
            });
        }
    }

private:
    // rows runs f over rows 0..n-1 in ranges, on up to threads threads.
    template <typename F>
    static void rows(int threads, int n, const F& f) {
        if (threads <= 1) {
            f(0, n);
            return;
        }
        cv::parallel_for_(
            cv::Range(0, threads), [&](const cv::Range& r) { f(r.start * n / threads, r.end * n / threads); },
            threads);
    }

    // Gates with at least this many weights per matrix run on all threads.
    static constexpr size_t parallel_weights = 16384;

    int r_ = 0, c_ = 0;
};

}  // namespace

void ttm_register_excitation() { cv::dnn::LayerFactory::registerLayer("TTMExcitation", ExcitationLayer::create); }
