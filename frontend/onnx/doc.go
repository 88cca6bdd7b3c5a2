// Package onnx imports ONNX models (a serialized ModelProto, opsets 7 to 21 of the default
// domain, and the ops of earlier opsets whose meaning did not change) into verified graphs.
//
// An ONNX graph computes shapes at run time; gcomp's graphs are static. Import therefore
// evaluates everything that is known at compile time as it goes — Constant nodes, Shape and the
// arithmetic exporters put on shapes (Gather, Concat, Unsqueeze, Cast, ...), and graph inputs
// bound by Options.Consts — with the op table's reference semantics (ops.Eval), and only what
// depends on a run-time input enters the graph:
//
//	initializer         → param, named as in ONNX (non-identifier characters become '_'); its
//	                      value is in Model.Weights
//	graph input         → input, its shape from the model or Options.Shapes ("batch" dims)
//	Options.Consts[x]   → folded into whatever uses it (Reshape's shape, Slice's starts, ...)
//	Constant            → folded; a constant op where a run-time value uses it
//	an ONNX op          → the ops of the table it means, with ONNX's broadcasting made explicit
//	                      (broadcast_in_dim), negative axes normalized and the attribute
//	                      defaults of the model's opset
//
// For example Gemm(x, W, b) with transB=1 becomes
//
//	%0 = dot_general(%x, %W) {lhs_contract=[1], rhs_contract=[1]} : f32[N,O]
//	%1 = broadcast_in_dim(%b) {dims=[1], shape=[N,O]} : f32[N,O]
//	%2 = add(%0, %1) : f32[N,O]
//
// Ops the table lacks are composed exactly from what it has where that is possible (ArgMax as
// a min over the positions of the maximum, Resize as gathers with index maps computed at
// import, ConvTranspose as a convolution of the dilated input, LSTM unrolled); anything else is
// an error that says what is not supported (IsUnsupported), never an approximation. An input
// that decides a shape but is not bound is a *NeedConst error naming it.
//
// Names: users name tensors as the file does ("onnx::Gemm_0", "4"); the graph's names are
// identifiers made from them, and Model.Names maps between the two. SafeFileNames derives file
// names from them for writing tensors.
//
// Untrusted files: every size read from the model is checked before anything is allocated from
// it (tensor data against its dims, external data against the file's real size, values computed
// at import against foldLimit); external data must be a regular file whose resolved path lies in
// the model's folder; model and .pb files are read within a budget (ReadModelFile,
// ReadTensorFile), without blocking on a named pipe. What onnx.checker refuses (attributes that
// ONNX's schemas do not declare or type otherwise, duplicate initializers or inputs, ...) is an
// error, not a guess.
package onnx
