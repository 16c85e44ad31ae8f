// What the project's OpenCV DNN layers share besides their kernels:
// reading attributes and reporting errors.
#ifndef TTM_LAYER_PARAMS_CV_H
#define TTM_LAYER_PARAMS_CV_H

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/dnn.hpp>

// ttm_layer_ints reads an integer attribute of 1 or want values (one value
// meaning all), under attr or alt (OpenCV's importer renames some ONNX
// attributes; alt may be null), def for each when it is absent. A
// malformed attribute throws std::runtime_error starting with who.
std::vector<int> ttm_layer_ints(const cv::dnn::LayerParams& p, const std::string& who, const char* attr,
                                const char* alt, int want, int def);

// TTM_LAYER_FAIL throws a layer's error, "<type> layer <name>: what", from
// a cv::dnn::Layer's members; the shim's guard turns it into a Go error.
#define TTM_LAYER_FAIL(what)                                                \
    do {                                                                    \
        std::ostringstream ttm_layer_fail_;                                 \
        ttm_layer_fail_ << type << " layer " << name << ": " << what;       \
        throw std::runtime_error(ttm_layer_fail_.str());                    \
    } while (0)

#endif
