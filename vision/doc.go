// Package vision turns camera frames into the image tokens of a Token Turing
// Machine robot policy:
//
//	sensor_msgs/Image or CompressedImage ──> Frame            (image*.go)
//	Frame ──> resize, normalise ──> NCHW float32 (3, H, W)    (preprocess*.go)
//	(3, H, W) ──> EfficientNet backbone (OpenCV DNN) ──> features (C, h, w)
//	features ──> 1x1 projection to d ──> FiLM(e) ──> TokenLearner ──> k tokens (k, d)
//	                                                           (frontend_head.go, film.go, tokenlearner.go)
//	k tokens of the last H frames ──> window (H·k, d)         (frontend_window.go)
//
// The same code path serves the robot, the simulator and replayed episodes:
// every source produces a Frame, and everything after the Frame is shared.
//
// # Decoding
//
// Image and CompressedImage mirror the ROS messages field for field, so this
// package does not import a ROS library. DecodeImage accepts rgb8, bgr8,
// rgba8, bgra8 and mono8 with any row padding and returns a Frame that views
// the message's bytes (no copy). It converts yuv422 (UYVY), yuv422_yuy2
// (YUYV) and the 8-bit Bayer mosaics (bayer_rggb8, bayer_bggr8, bayer_gbrg8,
// bayer_grbg8) to rgb8 with the arithmetic of OpenCV's cvtColor, which
// cv_bridge uses: the same bytes, borders included (internal/rawimage);
// Decoder.DecodeImage converts into a buffer it reuses. 16-bit, signed and
// floating-point encodings (depth images: 16UC1, mono16, 32FC1,
// bayer_rggb16 ...) are rejected with ErrDepthImage,
// everything else with ErrUnsupportedEncoding, and a frame whose size, step
// or byte count disagree with ErrBadSize. Decoder.DecodeCompressed accepts
// JPEG and PNG: it checks the magic bytes, the header (dimensions, bit depth,
// components) and the trailer in Go before OpenCV's imdecode sees the data,
// because OpenCV errors that escape as C++ exceptions abort the process.
// What OpenCV does with damaged data, as checked by the tests and fuzzers:
// libpng and libjpeg errors make imdecode return an empty matrix, which is
// reported as ErrCorrupt; libjpeg recovers from damaged entropy-coded data
// with a warning on stderr and grey blocks, which no header check can see.
// A frame truncated in transport is caught by the trailer check (JPEG EOI,
// PNG IEND).
//
// # Preprocessing
//
// PreprocessConfig is stored in the policy checkpoint as JSON. The resize
// reproduces OpenCV's cv::resize on float images (INTER_LINEAR,
// INTER_NEAREST, INTER_AREA, tested against OpenCV itself), then each channel
// is normalised as (v·scale - mean) / std and written planar (NCHW) into a
// buffer the caller owns. Nothing allocates once the frame size is known.
//
// # Backbone
//
// OpenBackbone runs any EfficientNet ONNX file (B0-B7: PyTorch/torchvision
// and TensorFlow/Keras tf2onnx exports, or the seeded graphs
// GenerateEfficientNet writes) through OpenCV's DNN module. Nothing reaches
// OpenCV unchecked: ReadONNXFile checks existence, size and SHA-256 and
// parses the protobuf in Go (internal/onnx); CheckONNX checks every node
// against an allow-list of what OpenCV 4.6 imports and names the first node
// it cannot run; PrepareONNX rewrites constructs exporters emit that OpenCV
// 4.6 rejects or miscomputes (initializers listed as inputs, inputs that
// must be attributes, Identity/Dropout, tf2onnx NHWC transposes, flatten
// chains, ReduceMean over H and W, zero Pads, Gemm flags, Sigmoid·Mul
// swish) and reports each rewrite. The network runs in a small C++ shim
// (backbone_cv.cpp) that catches every C++ exception, so an OpenCV error is
// a Go error, never an abort, and that copies the output into the caller's
// slice without allocating. LayerTimings gives OpenCV's per-layer profile.
//
// The arithmetic runs in the shim's own layers, registered with OpenCV and
// reached by further rewrites: TTMPointwise (1x1 convolutions with the
// excitation scale, swish and residual addition fused; pointwise_cv.cpp),
// TTMConv (the stem, the same product over gathered receptive fields),
// TTMDepthwise (depthwise convolutions with the swish and the channel
// means fused; depthwise_cv.cpp), TTMExcitation (a squeeze-excitation
// gate; excitation_cv.cpp) and TTMSwish. Each has AVX-512 kernels and
// portable C++ ones (kernels_cv.cpp picks them at run time);
// PointwiseMode and DepthwiseMode choose OpenCV's own layers instead.
//
// # Parameters
//
// The Go-side layers are llm.c style: one flat []float32 cut into named
// views (see HeadParams and ParamSpec), seeded initialisation, forward
// functions that keep what a backward pass needs, and backward functions
// that accumulate gradients into a second flat slice of the same layout.
// In a checkpoint the tensors live under the prefix "vision/" and the
// configuration (Config, JSON: preprocess, head, history, backbone file
// and SHA-256) under the metadata key "vision.config" (AddFrontEnd,
// FrontEndFromFile, SaveFrontEnd, LoadFrontEnd). All tensors are F32:
//
//	vision/conv1x1/kernel                                     (C, d)
//	vision/conv1x1/bias                                       (d)
//	vision/film/mult/kernel, vision/film/add/kernel           (E, d)  only with head.film = "head"
//	vision/film/mult/bias, vision/film/add/bias               (d)     only with head.film = "head"
//	vision/TokenLearnerModuleV11_0/LayerNorm_0/scale, bias    (d)
//	vision/TokenLearnerModuleV11_0/token_masking/Dense_0/kernel (d, hidden), bias (hidden)
//	vision/TokenLearnerModuleV11_0/token_masking/Dense_1/kernel (hidden, K), bias (K)
//
// `ttm encode --policy` reads exactly this layout.
//
// Shape letters used in comments: C = backbone channels, N = positions of
// the feature map (h·w), d = token width, E = instruction embedding width,
// K = tokens per frame, H = frames in the window.
package vision
