// Package gcomp is the door into the gcomp deep-learning compiler for Go programs: compile a
// model, open a session on a device with its weights, and run it from as many goroutines as
// the service has.
//
// # Compile
//
// A model comes from one of three places:
//
//   - Compile: a func(*frontend.Builder) compiled into the program itself, written with the
//     DSL of package frontend and the PyTorch-named layers of frontend/nn. No interpreter
//     runs. Its shapes, the batch among them, are whatever the function declares, so a
//     function that closes over a batch size compiles a model of that batch.
//   - CompileFile: a model.go (run by gcomp's embedded Go interpreter, so shapes are the
//     file's own), a .gir graph, or an .onnx model whose dynamic input shapes
//     Options.Shapes fixes (its batch, say) and whose initializers serve as weights. Options.Batch
//     traces a model.go that declares its batch with b.Batch(N), or an .onnx model, at another batch.
//     An .onnx model's inputs and outputs keep the names its file gives them (PyTorch's default
//     "onnx::Gemm_0", "4") in Inputs, Outputs, Options.Shapes and Session.Run's maps.
//   - CompileGraph: an *ir.Graph built with package ir or read by ir.Parse.
//
// Options choose the GPU architecture (sm_80 by default, sm_90 for H100), TF32 tensor cores
// for f32 matmuls, and the PTX producer (gcomp's own emitter, or NVVM IR compiled by
// libNVVM). A Model is the compiled PTX module and launch plan with its source graph.
//
// # Sizes known at run time
//
// One model can serve every size in a range (docs/dynamic.md): Options.MaxBatch builds a model
// that declares its batch with b.Batch(N) over a batch of 1 to MaxBatch rows, Options.MaxShapes
// bounds an .onnx model's dynamic axes, and a .gir graph or a DSL function may declare dims of its
// own (b.Dim). Options.Specialize also compiles variants for smaller ranges, picked per run
// ("batch=2", or "auto" to let the cost model choose), as gcomp build's flags of the same names
// do. Model.Dims lists the dims and their ranges; an input's or output's TensorInfo keeps the
// bound in Shape, each axis's size as an expression in Dims and its smallest in Lo:
//
//	model, err := gcomp.Compile("rows", rows, gcomp.Options{MaxBatch: 8})
//	fmt.Println(model.Dims(), model.Inputs()) // [{batch 1 8}] [{x f32 [8 3] dims [batch 3] lo [1 3]}]
//
// Session.Run then takes inputs of any sizes in range and returns outputs of the sizes they
// imply; a size outside its range, or inputs that disagree on one, is an ErrShapeMismatch naming
// the input, the dim and the range (input x: dim 0 (batch) is 9, outside batch's range [1,8]).
//
// # Sessions
//
// Open puts a model on a device: "auto" (the first usable GPU, else the PTX simulator),
// "cuda:N", "sim" or "ref" (the reference interpreter). Weights come from a safetensors file
// or a map of tensors and are checked against the model's parameters (names, dtypes,
// shapes); on a GPU they are copied once. Session.Run takes a context and a tensor per input
// and returns every output:
//
//	model, err := gcomp.Compile("mlp", func(b *frontend.Builder) {
//		x := b.Input("x", frontend.F32, batch, 64)
//		b.Output("y", nn.NewLinear(b, "fc", 64, 10).Forward(x))
//	}, gcomp.Options{Target: "sm_90"})
//	...
//	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "auto", WeightsFile: "mlp.safetensors"})
//	...
//	defer s.Close()
//	out, err := s.Run(ctx, map[string]*gcomp.Tensor{"x": gcomp.Float32(pixels, batch, 64)})
//	...
//	scores, err := out["y"].Float32s()
//
// A Session is safe for concurrent use. It holds a bounded pool of run slots
// (SessionOptions.Pool): on a GPU each slot has its own CUDA stream, input and output buffers
// and memory-plan arena, and all of them read the one copy of the weights; on the simulator
// each slot is a simulated device of its own; on ref the slots share the weights' host
// tensors. A Run waits for a free slot.
//
// # Tensors
//
// A Tensor is either a view over a Go slice ([]float32, []float64, []int32, []int64, []int8,
// []uint8: View, Float32, Int64, ...) or a gcomp host tensor (FromHost: every dtype,
// f16 and bf16 included). On a compiled device a view's memory is the bytes copied to the
// device, with no conversion on the host, and outputs with a Go element type are read
// straight into a new slice that Float32s (or Values) returns without copying. On ref, f64
// and i64 views are shared with the interpreter; others are converted.
//
// # Cancellation and errors
//
// Run checks its context before every kernel (before every graph node on ref): a run that is
// cancelled or past its deadline returns a *StopError naming the kernel or node it stopped
// before, wrapping context.Canceled or context.DeadlineExceeded. On a GPU the kernels already
// queued finish first. Errors are typed for errors.Is and errors.As: ErrShapeMismatch (with
// a *ShapeError), ErrMissingInput, ErrUnknownInput, ErrMissingWeight, ErrUnknownWeight,
// ErrOutOfMemory, ErrNoDevice and ErrClosed.
//
// # Language models
//
// LoadLM opens a Hugging Face model folder (config.json, model.safetensors or its shards, a
// tokenizer) of GPT-2 or the Llama family on a device, and Generate streams the continuation of a
// prompt token by token, with greedy decoding or temperature, top-k and top-p sampling:
//
//	m, err := gcomp.LoadLM("TinyLlama-1.1B", gcomp.LMOptions{Device: "auto"})
//	...
//	defer m.Close()
//	for tok, err := range m.Generate(ctx, "Once upon a time", gcomp.GenerateOptions{MaxNewTokens: 64, Temperature: 0.8}) {
//		if err != nil {
//			return err
//		}
//		fmt.Print(tok.Text)
//	}
//
// Package lm holds the programs (prefill and one-token decode over a static KV cache) and the
// sampler; docs/lm.md describes the design.
package gcomp
