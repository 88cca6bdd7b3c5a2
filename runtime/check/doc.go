// Package check runs a compiled model on the PTX simulator with every check
// on (memcheck, racecheck, synccheck) and compares each output with the
// reference interpreter on the same inputs and weights: the proof, without a
// GPU, that the generated kernels compute what the graph means. It is what
// `gcomp check` and `make demo` print.
//
// Tolerances are per element, relative with an absolute floor, as
// internal/tolerance defines them: |got − want| ≤ max(rel·|want|, abs), with
// rel 1e-5 for f32 (5e-3 when f32 contractions run on TF32 tensor cores),
// 2e-2 for f16 and bf16 and 1e-12 for f64, taken from the least precise float
// type the output is computed in (tolerance.Precision: an f16 result cast to an
// f64 output is held to f16's); integers and bools must match exactly. Where
// docs/ops.md defines special values the comparison is exact about them: NaN
// passes against NaN only, and a zero only against a zero of the same sign.
// A whole model's output depends on many
// contractions of unknown operand scale, so the floor is taken from the output
// itself: abs = rel·RMS(reference output), which judges elements that cancel to
// nearly zero against the tensor's typical magnitude.
package check
