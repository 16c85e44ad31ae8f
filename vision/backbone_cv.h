// A thin C interface over OpenCV's DNN module for the backbone. Every entry
// point catches C++ exceptions and reports them as a malloc'ed message in
// *err (freed by the caller), so an OpenCV error becomes a Go error instead
// of aborting the process.
#ifndef TTM_BACKBONE_CV_H
#define TTM_BACKBONE_CV_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ttm_net ttm_net;

// ttm_net_read_onnx imports an ONNX model from memory; NULL on error.
ttm_net* ttm_net_read_onnx(const char* buf, size_t len, char** err);
void ttm_net_free(ttm_net* n);

// ttm_net_configure sets the backend, target and layer fusion, and the
// names and shapes used by every ttm_net_forward: the image input
// (in_dims dims in in_shape), the optional FiLM input (film_name NULL or
// "" for none, film_len floats as a 1 x film_len blob) and the output layer.
int ttm_net_configure(ttm_net* n, int backend, int target, int fusion,
                      const char* in_name, int in_dims, const int* in_shape,
                      const char* film_name, int film_len,
                      const char* out_name, char** err);

// ttm_net_forward runs the network: in and film are copied into the network,
// the output is copied into out, which holds out_len floats. The output's
// shape is written to out_shape (up to 8 dims) and its rank to *out_dims.
// Returns 0 on success, -1 on error.
int ttm_net_forward(ttm_net* n, const float* in, const float* film,
                    float* out, size_t out_len, int* out_dims, int* out_shape, char** err);

// ttm_net_profile returns the per-layer timings of the last forward pass as
// lines "name\ttype\tmilliseconds\n" (malloc'ed), and the total in *total_ms.
char* ttm_net_profile(ttm_net* n, double* total_ms, char** err);

// ttm_layer_registered reports whether OpenCV's layer factory knows a
// layer type (1) or not (0).
int ttm_layer_registered(const char* type);

void ttm_set_num_threads(int n);
int ttm_get_num_threads(void);
const char* ttm_opencv_version(void);

#ifdef __cplusplus
}
#endif

#endif
