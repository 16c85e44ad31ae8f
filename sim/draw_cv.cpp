#include "draw_cv.h"

#include <cstdlib>
#include <cstring>
#include <exception>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

static void set_err(char** err, const char* what) {
    if (err) {
        *err = strdup(what ? what : "unknown C++ exception");
    }
}

extern "C" int ttm_sim_draw(void* mat, const int32_t* ops, int nops, const int32_t* pts, int npts, int shift, char** err) {
    try {
        cv::Mat& img = *static_cast<cv::Mat*>(mat);
        if (img.type() != CV_8UC3) {
            set_err(err, "draw: image is not 8-bit 3-channel");
            return -1;
        }
        for (int i = 0; i < nops; i++) {
            const int32_t* op = ops + i * TTM_SIM_OP_FIELDS;
            int kind = op[0], n = op[1], off = op[3];
            uint32_t c = static_cast<uint32_t>(op[2]);
            cv::Scalar col((c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff);
            int need = kind == TTM_SIM_POLY ? 2 * n : kind == TTM_SIM_CIRCLE ? 2 : kind == TTM_SIM_LINE ? 4 : 0;
            if (off < 0 || need < 0 || off + need > npts) {
                set_err(err, "draw: operation reads past the point buffer");
                return -1;
            }
            switch (kind) {
            case TTM_SIM_FILL:
                img.setTo(col);
                break;
            case TTM_SIM_POLY: {
                const cv::Point* p = reinterpret_cast<const cv::Point*>(pts + off);
                cv::fillPoly(img, &p, &n, 1, col, cv::LINE_8, shift);
                break;
            }
            case TTM_SIM_CIRCLE:
                cv::circle(img, cv::Point(pts[off], pts[off + 1]), n, col, cv::FILLED, cv::LINE_8, shift);
                break;
            case TTM_SIM_LINE:
                cv::line(img, cv::Point(pts[off], pts[off + 1]), cv::Point(pts[off + 2], pts[off + 3]), col, n, cv::LINE_8, 0);
                break;
            default:
                set_err(err, "draw: unknown operation");
                return -1;
            }
        }
        return 0;
    } catch (const std::exception& e) {
        set_err(err, e.what());
    } catch (...) {
        set_err(err, "unknown C++ exception");
    }
    return -1;
}
