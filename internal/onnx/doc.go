// Package onnx reads and writes the subset of the ONNX protobuf format that
// this project needs: ModelProto, GraphProto, NodeProto, AttributeProto,
// TensorProto, ValueInfoProto (tensor types and shapes) and the opset
// imports, with a hand-written protobuf wire codec.
//
// Fields this package does not model (training info, functions, sparse
// initializers, quantization annotations, non-tensor types, ...) are kept
// as raw wire bytes and written back unchanged, so a model read and written
// again loses nothing.
//
// Parse never panics: malformed, truncated and oversized input gives an
// error (FuzzParse checks this). Parse checks the wire format only; whether
// a model makes sense (tensor sizes match their data, node inputs exist) is
// the job of Tensor.Check and of the caller.
//
// Presence matters to some readers of ONNX (OpenCV's importer uses proto2
// has_* accessors), so Marshal writes every attribute's value field even
// when it is zero, always writes a tensor's data type, a model's IR version
// and an opset's version, and writes a shape that is present but empty.
//
// The field numbers follow onnx/onnx.proto (IR version 8).
package onnx
