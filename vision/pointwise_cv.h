// The TTMPointwise layer: 1x1 convolution with its swish, excitation scale
// and residual fused, for OpenCV's DNN module, registered by
// backbone_cv.cpp's register_layers. See pointwise_cv.cpp.
#ifndef TTM_POINTWISE_CV_H
#define TTM_POINTWISE_CV_H

#ifdef __cplusplus
// ttm_register_pointwise registers the layer type "TTMPointwise" with
// OpenCV's layer factory (backbone_cv.cpp calls it once).
void ttm_register_pointwise();
#endif

#endif
