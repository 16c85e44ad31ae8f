// The TTMExcitation layer: a squeeze-excitation gate for OpenCV's DNN
// module, registered by backbone_cv.cpp's register_layers. See
// excitation_cv.cpp.
#ifndef TTM_EXCITATION_CV_H
#define TTM_EXCITATION_CV_H

#ifdef __cplusplus
// ttm_register_excitation registers the layer type "TTMExcitation" with
// OpenCV's layer factory (backbone_cv.cpp calls it once).
void ttm_register_excitation();
#endif

#endif
