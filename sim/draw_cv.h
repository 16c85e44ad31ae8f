// A one-call-per-frame drawing shim over OpenCV's imgproc, for the
// simulator's renderer. gocv v0.31's FillPoly needs a freshly built
// PointsVector (C++ and Go allocations) for every polygon, and every gocv
// drawing call is a separate cgo crossing; this shim draws a whole frame's
// draw list with the same OpenCV functions (cv::fillPoly, cv::circle,
// cv::line, Mat::setTo) in one call and allocates nothing on the Go side.
// Every C++ exception is caught and returned as a malloc'ed message.
#ifndef TTM_SIM_DRAW_CV_H
#define TTM_SIM_DRAW_CV_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Operation kinds; each op is TTM_SIM_OP_FIELDS int32 values:
// kind, n (vertices, radius, or thickness), packed colour 0xRRGGBB
// (written to channels 0, 1, 2 in that order), offset into pts.
enum { TTM_SIM_FILL = 0, TTM_SIM_POLY = 1, TTM_SIM_CIRCLE = 2, TTM_SIM_LINE = 3 };
enum { TTM_SIM_OP_FIELDS = 4 };

// ttm_sim_draw draws nops operations on the 8-bit, 3-channel cv::Mat* mat.
// POLY fills the polygon of n points at pts[off..] (x, y pairs, fixed point
// with shift fractional bits); CIRCLE fills the disc of centre pts[off..+2]
// and radius n (fixed point); LINE draws the segment pts[off..+4] (integer
// pixels) n pixels thick; FILL sets every pixel. Returns 0, or -1 with *err.
int ttm_sim_draw(void* mat, const int32_t* ops, int nops, const int32_t* pts, int npts, int shift, char** err);

#ifdef __cplusplus
}
#endif

#endif
