// Package ops is gcomp's op set as one data table: for every op its name, arity, class, attributes,
// shape and dtype inference, and reference semantics. Passes ask the table ("is this
// elementwise?") instead of switching on names, and the reference interpreter (runtime/ref) runs
// the table's Eval functions: they are the definition of what each op computes.
//
// Each row's Doc states the op's edge cases (NaN, ±inf, ±0, integer overflow, empty reductions);
// docs/ops.md is generated from the table. The rules all rows share:
//
//   - float results are computed in float64 and rounded once to the result dtype (which for f32
//     add, sub, mul, div and sqrt equals computing in f32; f16 and bf16 round to nearest even);
//   - integer results wrap; integer x/0 is 0;
//   - reductions and contractions accumulate in float64 (or wrapping int64) in a fixed order and
//     round once, so results are bit-identical whatever the number of threads;
//   - binary elementwise operands have equal types: broadcasting is explicit (broadcast_in_dim).
//
// Inference is what a front end calls to type a node; its errors are short and name the types:
//
//	ops.Infer("dot_general", []ir.Type{ir.T(ir.F32, 64, 784), ir.T(ir.F32, 128, 10)},
//		ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}})
//	// dot_general: inner dimensions differ: f32[64,784] and f32[128,10]
//
// The classes group ops by how they iterate (Elementwise, Reduce, Movement, Contraction, Other);
// ClassOf answers for a node's op name.
package ops
