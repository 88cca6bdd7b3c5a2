// Package compiler turns a model graph into an artifact: it runs the pass
// pipeline (canonicalization, fusion, memory planning, cost report), lowers
// every fused kernel to PTX in one module, and binds each kernel parameter to
// the buffer the memory plan gave it.
//
//	res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: 80}})
//	res.Artifact.Write("model.ptx") // and model.plan.json beside it
package compiler
