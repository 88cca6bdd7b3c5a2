// Package check runs a compiled model on the PTX simulator with every check
// on (memcheck, racecheck, synccheck) and compares each output with the
// reference interpreter on the same inputs and weights: the proof, without a
// GPU, that the generated kernels compute what the graph means. It is what
// `gcomp check` and `make demo` print.
//
// Tolerances are per element, relative with an absolute floor:
// |got − want| ≤ rel·|want| + rel·scale, where rel is 1e-5 for f32 (5e-3 when
// f32 contractions run on TF32 tensor cores), 2e-2 for f16 and bf16, 1e-12
// for f64, and integers and bools must match exactly; scale is the output's
// root-mean-square reference value (at least 1e-30), so elements that cancel
// to nearly zero are judged against the tensor's magnitude rather than their
// own. A NaN or infinity where the reference is finite never passes.
package check
