// Package check runs a compiled model on the PTX simulator with every check
// on (memcheck, racecheck, synccheck) and compares each output with the
// reference interpreter on the same inputs and weights: the proof, without a
// GPU, that the generated kernels compute what the graph means. It is what
// `gcomp check` and `make demo` print.
//
// Each output element is held to its own error bound, computed from the reference's computation
// by internal/tolerance (Bounds): every rounded op contributes its rounding on the magnitudes of
// the terms it combines (rel per op — 1e-5 for f32, 2e-2 for f16 and bf16, 1e-12 for f64 — and
// k·u·Σ|terms| for sums and contractions, with the operands' 10-bit rounding under TF32; f16 and
// bf16 contractions accumulate in f32 and round once, float casts round once to nearest), and
// every op passes on its operands' bounds by its sensitivity, so a result that cancels is judged
// against the terms that cancelled. Integers and bools computed exactly must match exactly. NaN
// passes against NaN only, an infinity against itself, and a zero against a zero of the same sign
// where the result is exact. Compare, for a bare tensor without its graph, keeps the rule
// |got − want| ≤ max(rel·|want|, rel·RMS(want)).
package check
