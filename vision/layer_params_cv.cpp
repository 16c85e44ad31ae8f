#include "layer_params_cv.h"

#include <stdexcept>

std::vector<int> ttm_layer_ints(const cv::dnn::LayerParams& p, const std::string& who, const char* attr,
                                const char* alt, int want, int def) {
    const char* key = p.has(attr) ? attr : (alt && p.has(alt) ? alt : nullptr);
    if (!key) {
        return std::vector<int>(want, def);
    }
    const cv::dnn::DictValue& v = p.get(key);
    if (!v.isInt() || (v.size() != 1 && v.size() != want)) {
        throw std::runtime_error(who + ": attribute " + attr + " must hold 1 or " + std::to_string(want) +
                                 " integers");
    }
    std::vector<int> out(want);
    for (int i = 0; i < want; i++) {
        out[i] = v.get<int>(v.size() == 1 ? 0 : i);
    }
    return out;
}
