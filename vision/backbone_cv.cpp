// C shim over cv::dnn for the backbone; see backbone_cv.h.
#include "backbone_cv.h"
#include "depthwise_cv.h"
#include "excitation_cv.h"
#include "kernels_cv.h"
#include "pointwise_cv.h"

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/core/hal/hal.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/all_layers.hpp>

struct ttm_net {
    cv::dnn::Net net;
    std::string in_name, film_name, out_name;
    std::vector<int> in_shape;
    int film_len = 0;
};

static void set_err(char** err, const char* what) {
    if (err) {
        *err = strdup(what ? what : "unknown C++ exception");
    }
}

// guard runs f, turning any C++ exception into an error message.
template <typename F>
static int guard(char** err, F f) {
    try {
        f();
        return 0;
    } catch (const cv::Exception& e) {
        set_err(err, e.what());
    } catch (const std::exception& e) {
        set_err(err, e.what());
    } catch (...) {
        set_err(err, "unknown C++ exception");
    }
    return -1;
}

// quiet silences OpenCV's own logging for a scope: the importer logs every
// failure before throwing, and the exception carries the same message.
struct quiet {
    cv::utils::logging::LogLevel old;
    quiet() : old(cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT)) {}
    ~quiet() { cv::utils::logging::setLogLevel(old); }
};

// FastSwishLayer is swish, x * sigmoid(x) = x / (1 + exp(-x)), computed by
// ttm_swish_fast (depthwise_cv.cpp: AVX-512 or AVX2 exp and reciprocal,
// chosen at run time; on other CPUs swish below, with the exponentials
// computed by OpenCV's vectorised cv::hal::exp32f and the rest in loops
// that -O2 leaves scalar, about 2.5 ns a value). OpenCV
// 4.6's own Swish layer calls the scalar expf per element, which made
// activations a third of EfficientNet's time. It is deliberately not an
// ActivationLayer: OpenCV would fuse it into the preceding convolution,
// and measured on EfficientNet-B0 the fused convolutions are slower than
// the convolutions plus a separate vectorised pass (see the benchmarks).
class FastSwishLayer CV_FINAL : public cv::dnn::Layer {
public:
    explicit FastSwishLayer(const cv::dnn::LayerParams& p) { setParamsFrom(p); }

    static cv::Ptr<cv::dnn::Layer> create(cv::dnn::LayerParams& p) {
        return cv::Ptr<cv::dnn::Layer>(new FastSwishLayer(p));
    }

    bool supportBackend(int backendId) CV_OVERRIDE {
        return backendId == cv::dnn::DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<cv::dnn::MatShape>& inputs, const int requiredOutputs,
                         std::vector<cv::dnn::MatShape>& outputs,
                         std::vector<cv::dnn::MatShape>& internals) const CV_OVERRIDE {
        cv::dnn::Layer::getMemoryShapes(inputs, requiredOutputs, outputs, internals);
        return true;  // can run in place
    }

    void forward(cv::InputArrayOfArrays in_arr, cv::OutputArrayOfArrays out_arr,
                 cv::OutputArrayOfArrays) CV_OVERRIDE {
        std::vector<cv::Mat> inputs, outputs;
        in_arr.getMatVector(inputs);
        out_arr.getMatVector(outputs);
        for (size_t i = 0; i < inputs.size(); i++) {
            const cv::Mat& src = inputs[i];
            cv::Mat& dst = outputs[i];
            CV_Assert(src.type() == CV_32F && dst.type() == CV_32F && src.isContinuous() &&
                      dst.isContinuous() && src.total() == dst.total());
            const float* s = src.ptr<float>();
            float* d = dst.ptr<float>();
            const int n = (int)src.total();
            const int chunk = 8192;
            cv::parallel_for_(cv::Range(0, (n + chunk - 1) / chunk), [&](const cv::Range& r) {
                for (int c = r.start; c < r.end; c++) {
                    int lo = c * chunk;
                    ttm_swish_fast(s + lo, d + lo, std::min(chunk, n - lo));
                }
            });
        }
    }

    // swish computes dst = src / (1 + exp(-src)); src and dst may be the same.
    static void swish(const float* src, float* dst, int n) {
        float e[512];
        for (int o = 0; o < n; o += 512) {
            int m = std::min(512, n - o);
            for (int i = 0; i < m; i++) {
                e[i] = -src[o + i];
            }
            cv::hal::exp32f(e, e, m);
            for (int i = 0; i < m; i++) {
                dst[o + i] = src[o + i] / (1.f + e[i]);
            }
        }
    }
};

void ttm_swish(const float* src, float* dst, int n) { FastSwishLayer::swish(src, dst, n); }

static void register_layers() {
    static bool done = [] {
        cv::dnn::LayerFactory::registerLayer("TTMSwish", FastSwishLayer::create);
        ttm_register_depthwise();
        ttm_register_pointwise();
        ttm_register_excitation();
        return true;
    }();
    (void)done;
}

extern "C" {

ttm_net* ttm_net_read_onnx(const char* buf, size_t len, char** err) {
    ttm_net* n = new ttm_net;
    int rc = guard(err, [&] {
        register_layers();
        quiet q;
        n->net = cv::dnn::readNetFromONNX(buf, len);
        if (n->net.empty()) {
            throw std::runtime_error("OpenCV imported an empty network");
        }
    });
    if (rc != 0) {
        delete n;
        return nullptr;
    }
    return n;
}

void ttm_net_free(ttm_net* n) { delete n; }

int ttm_net_configure(ttm_net* n, int backend, int target, int fusion,
                      const char* in_name, int in_dims, const int* in_shape,
                      const char* film_name, int film_len,
                      const char* out_name, char** err) {
    return guard(err, [&] {
        n->net.setPreferableBackend(backend);
        n->net.setPreferableTarget(target);
        n->net.enableFusion(fusion != 0);
        n->in_name = in_name;
        n->in_shape.assign(in_shape, in_shape + in_dims);
        n->film_name = film_name ? film_name : "";
        n->film_len = film_len;
        n->out_name = out_name;
    });
}

int ttm_net_forward(ttm_net* n, const float* in, const float* film,
                    float* out, size_t out_len, int* out_dims, int* out_shape, char** err) {
    return guard(err, [&] {
        // Mat headers over the caller's memory: setInput copies the data.
        cv::Mat blob((int)n->in_shape.size(), n->in_shape.data(), CV_32F, (void*)in);
        n->net.setInput(blob, n->in_name);
        if (!n->film_name.empty()) {
            int fs[2] = {1, n->film_len};
            cv::Mat f(2, fs, CV_32F, (void*)film);
            n->net.setInput(f, n->film_name);
        }
        cv::Mat o = n->net.forward(n->out_name);
        *out_dims = o.dims;
        for (int i = 0; i < o.dims && i < 8; i++) {
            out_shape[i] = o.size[i];
        }
        if (o.type() != CV_32F) {
            throw std::runtime_error("output is not float32");
        }
        if (!o.isContinuous()) {
            o = o.clone();
        }
        if (out != nullptr) {
            if (o.total() != out_len) {
                std::ostringstream s;
                s << "output has " << o.total() << " elements, buffer " << out_len;
                throw std::runtime_error(s.str());
            }
            std::memcpy(out, o.ptr<float>(), out_len * sizeof(float));
        }
    });
}

char* ttm_net_profile(ttm_net* n, double* total_ms, char** err) {
    std::string s;
    int rc = guard(err, [&] {
        std::vector<double> times;
        double freq = cv::getTickFrequency();
        *total_ms = (double)n->net.getPerfProfile(times) * 1000.0 / freq;
        std::vector<cv::String> names = n->net.getLayerNames();
        std::ostringstream o;
        for (size_t i = 0; i < times.size() && i < names.size(); i++) {
            cv::Ptr<cv::dnn::Layer> l = n->net.getLayer(names[i]);
            o << names[i] << '\t' << (l ? l->type : std::string("?")) << '\t'
              << times[i] * 1000.0 / freq << '\n';
        }
        s = o.str();
    });
    if (rc != 0) {
        return nullptr;
    }
    return strdup(s.c_str());
}

int ttm_layer_registered(const char* type) {
    try {
        register_layers();
        cv::dnn::LayerParams lp;
        lp.type = type;
        lp.name = "probe";
        cv::Ptr<cv::dnn::Layer> l = cv::dnn::LayerFactory::createLayerInstance(type, lp);
        return l ? 1 : 0;
    } catch (...) {
        // The factory found the type; its constructor wanted parameters.
        return 1;
    }
}

void ttm_set_num_threads(int n) { cv::setNumThreads(n); }
int ttm_get_num_threads(void) { return cv::getNumThreads(); }
const char* ttm_opencv_version(void) { return CV_VERSION; }

}  // extern "C"
