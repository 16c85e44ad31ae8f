// Attribute reading shared by the project's OpenCV DNN layers.
#ifndef TTM_LAYER_PARAMS_CV_H
#define TTM_LAYER_PARAMS_CV_H

#include <string>
#include <vector>

#include <opencv2/dnn.hpp>

// ttm_layer_ints reads an integer attribute of 1 or want values (one value
// meaning all), under attr or alt (OpenCV's importer renames some ONNX
// attributes; alt may be null), def for each when it is absent. A
// malformed attribute throws std::runtime_error starting with who.
std::vector<int> ttm_layer_ints(const cv::dnn::LayerParams& p, const std::string& who, const char* attr,
                                const char* alt, int want, int def);

#endif
