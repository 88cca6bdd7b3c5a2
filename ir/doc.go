// Package ir is gcomp's static dataflow graph: element types, static shapes, SSA values, a
// verifier, the .gir text form and DOT export. It knows nothing about GPUs or about what an op
// computes; the op table lives in package ops.
//
// A graph is a list of values in definition order. Inputs and parameters are values with the ops
// "input" and "param"; every other value applies an op to earlier values:
//
//	graph linreg {
//	  input %x : f32[8,2]
//	  param %linear.weight : f32[5,2] {high=0.7071067811865475, init="uniform", low=-0.7071067811865475}
//	  param %linear.bias : f32[5] {high=0.7071067811865475, init="uniform", low=-0.7071067811865475}
//	  %0 = dot_general(%x, %linear.weight) {lhs_contract=[1], rhs_contract=[1]} : f32[8,5]
//	  %1 = broadcast_in_dim(%linear.bias) {dims=[1]} : f32[8,5]
//	  %2 = add(%0, %1) : f32[8,5]
//	  output y = %2
//	}
//
// Unnamed values are numbered in definition order when printed, so printing, parsing and printing
// again gives the same text. docs/ir.md has the grammar.
package ir
