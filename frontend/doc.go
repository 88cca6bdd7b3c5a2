// Package frontend is gcomp's Go DSL for writing models, with the names PyTorch users know.
//
// A model is a Go function that receives a Builder, declares inputs and parameters, computes
// with Tensor methods and declares outputs:
//
//	func Model(b *frontend.Builder) {
//		x := b.Input("x", frontend.F32, 8, 2)
//		fc := b.Sub("linear")
//		w := fc.Param("weight", frontend.T(frontend.F32, 5, 2), frontend.DefaultUniform(2))
//		bias := fc.Param("bias", frontend.T(frontend.F32, 5), frontend.DefaultUniform(2))
//		b.Output("y", frontend.Linear(x, w, bias))
//	}
//
// frontend.Build("linreg", Model) runs it and returns the verified graph (package ir), which
// prints as
//
//	graph linreg {
//	  input %x : f32[8,2] loc("model.go:2")
//	  param %linear.weight : f32[5,2] {high=0.7071067811865475, init="uniform", low=-0.7071067811865475} loc("model.go:4")
//	  param %linear.bias : f32[5] {high=0.7071067811865475, init="uniform", low=-0.7071067811865475} loc("model.go:5")
//	  %0 = dot_general(%x, %linear.weight) {lhs_contract=[1], rhs_contract=[1]} : f32[8,5] loc("model.go:6")
//	  %1 = broadcast_in_dim(%linear.bias) {dims=[1], shape=[8,5]} : f32[8,5] loc("model.go:6")
//	  %2 = add(%0, %1) : f32[8,5] loc("model.go:6")
//	  output y = %2
//	}
//
// Package frontend/nn wraps the same computations in modules that own their parameters
// (nn.NewLinear(b, "linear", 2, 5)), named as in PyTorch's state_dict so that PyTorch weights
// load without renaming.
//
// # Tensors
//
// Tensor methods follow torch.Tensor: elementwise Add, Mul, Exp, Relu, ...; Matmul with
// torch.matmul's batching rules; Reshape and View (one dim may be -1), Transpose, Permute,
// Slice, Narrow, Index, Chunk, Split; Sum, Mean, Max and Min over dims, with KeepDim variants;
// Softmax and LogSoftmax, computed stably. Dims may be negative, counting from the end. Binary
// operations broadcast as NumPy does, by inserting explicit broadcast_in_dim nodes; operand
// dtypes must be equal (Cast converts). Scalar variants (AddScalar, MulScalar, ...) make a
// constant of the tensor's type. The composites of torch.nn.functional are functions: Linear,
// Conv2d, MaxPool2d, AvgPool2d, Embedding, LayerNorm, ScaledDotProductAttention, RNNCell,
// LSTMCell, GRUCell, the unrolled RNN, LSTM and GRU, MSELoss and CrossEntropyLoss; the
// activation family (Clamp, Hardtanh, Relu6, Hardswish, Hardsigmoid, LeakyRelu, Elu, Softplus,
// Mish, Prelu), BatchNorm, BatchNormTrain, GroupNorm, InstanceNorm, Conv1d, Conv2dSame,
// ConvTranspose2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d, Interpolate, Flip, Argmax, Argmin,
// Topk, Cumsum and DropoutTrain. Each is built from exact primitives, so its gradient comes from
// theirs; frontend/nn's tests hold them to PyTorch's values, forward and backward, in f32, f16
// and bf16. WithParamDType declares a model's f32 parameters in f16 or bf16 instead, as PyTorch's
// model.to(dtype). WithQuantizedParams stores the parameters a rule picks as the dequantize op's
// integers, scales and zero points, so a model written against float weights runs a quantized
// checkpoint unchanged (package lm's loader uses it); a rule's Quant.Permuted stores a layer's
// input channels in another order (GPTQ's act-order), and Linear gathers its input to match.
//
// A graph is built in eval mode unless WithTraining is given (Builder.Training): then nn.Dropout
// drops, with numbers from the graph's random key input (RandomKey, NextStream), and BatchNorm
// normalizes with batch statistics and updates its buffers (UpdateBuffer).
//
// # The batch
//
// Builder.Batch(64) returns the batch the graph is built at: 64, the model's own, unless the
// graph is built WithBatch(B), as gcomp's --batch does. Shapes that carry the batch (inputs, an
// RNN's initial state) ask for it there instead of writing the number.
//
// # Parameters
//
// Builder.Param declares a named weight with an initializer (Uniform, DefaultUniform, Normal,
// Zeros, Ones, Constant). The graph records only the initializer; tools that need starting
// weights draw them from a seed and the parameter's name, so every parameter gets the same
// values whatever else the model declares. Builder.Sub opens the scope of a submodule:
// parameters declared in b.Sub("fc1") are named "fc1.weight" and so on.
//
// # Errors and positions
//
// Every value records the user's source position ("model.go:17"), found by the Builder's
// PositionFunc: by default CallerPosition, which walks the Go stack past this package and its
// subpackages. A mistake in the model (mismatched shapes or dtypes, a bad dim, an unknown or
// duplicate name) panics with an *Error carrying that position, the way PyTorch raises an
// exception, and Build returns it as an error:
//
//	model.go:17: matmul: inner dimensions differ: x is f32[64,784], w is f32[128,10]
//
// Build also turns any other panic in the model into an *Error, so a Go panic trace never
// reaches the user. A program that runs model files in a Go interpreter, where the stack shows
// the interpreter and not the model, passes its own PositionFunc with WithPosition; when no
// position is known it is left empty, and the error message has none.
package frontend
