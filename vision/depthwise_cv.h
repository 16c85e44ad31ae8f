// The TTMDepthwise layer: depthwise 2-D convolution for OpenCV's DNN module,
// registered by backbone_cv.cpp's register_layers. See depthwise_cv.cpp.
#ifndef TTM_DEPTHWISE_CV_H
#define TTM_DEPTHWISE_CV_H

#ifdef __cplusplus
// ttm_register_depthwise registers the layer type "TTMDepthwise" with
// OpenCV's layer factory (backbone_cv.cpp calls it once).
void ttm_register_depthwise();
#endif

#endif
