package plan

import "github.com/gcomp/gcomp/ir"

// Some plans are still made by codegen/ptx's emitter itself: which contraction template takes a
// kernel is found by writing it (a GEMV whose plan does not fit goes to the tiles, a contraction
// the tiles cannot take falls back to the direct template), and the reduction, transpose-tile,
// staged-loop and pooling plans are built from the emitter's own layouts. Until those decisions
// are plans of their own, codegen/ptx registers them here when it is linked in (its init), and
// the functions below ask it; codegen/nvvm calls these and never imports codegen/ptx. Every
// program that produces PTX links codegen/ptx (codegen/backend imports both producers).

// Emitter is what codegen/ptx registers: its functions of the same names.
type Emitter struct {
	Template        func(Kernel) string
	ReducePlan      func(Kernel) (Reduction, error)
	TransposePlan   func(Kernel) TransposeTile
	StagedPlan      func(Kernel) Staged
	PoolGeometry    func(*ir.Value) (kern, stride, pad []int)
	ContractionPlan func(Kernel, Target) (Contraction, error)
	GEMMPlan        func(Kernel, Target) (GEMM, error)
	Generate        func(Kernel, Target) (string, Launch, error)
}

var emitter *Emitter

// Register installs codegen/ptx's plans (once, from its init).
func Register(e Emitter) {
	if emitter != nil {
		panic("codegen/plan: a second emitter registered")
	}
	emitter = &e
}

// Registered reports whether codegen/ptx's plans are installed.
func Registered() bool { return emitter != nil }

func registered() *Emitter {
	if emitter == nil {
		panic("codegen/plan: no emitter registered: the program must link codegen/ptx")
	}
	return emitter
}

// Template names the template codegen/ptx's Generate picks for a verified kernel: "persistent",
// "update", "attention backward" (attention_lse, attention_grad), "attention", "norm gemv" (a GEMV with a norm prologue), "loop", "transpose tile",
// "staged loop", "reduction", "contraction", or "" for a kernel no template takes (Generate says
// why).
func Template(k Kernel) string { return registered().Template(k) }

// ReducePlan plans a kernel of the "reduction" Template as codegen/ptx generates it.
func ReducePlan(k Kernel) (Reduction, error) { return registered().ReducePlan(k) }

// TransposePlan returns the plan of a kernel of the "transpose tile" Template.
func TransposePlan(k Kernel) TransposeTile { return registered().TransposePlan(k) }

// StagedPlan returns the plan of a kernel of the "staged loop" Template.
func StagedPlan(k Kernel) Staged { return registered().StagedPlan(k) }

// PoolGeometry is a pooling's kernel, stride and padding with the op table's defaults (stride
// = kernel, no padding).
func PoolGeometry(v *ir.Value) (kern, stride, pad []int) { return registered().PoolGeometry(v) }

// ContractionPlan says which contraction template codegen/ptx generates k with for target t.
func ContractionPlan(k Kernel, t Target) (Contraction, error) {
	return registered().ContractionPlan(k, t)
}

// GEMMPlan returns the tiled plan of a kernel whose ContractionPlan kind is "ffma" or
// "tensor core".
func GEMMPlan(k Kernel, t Target) (GEMM, error) { return registered().GEMMPlan(k, t) }

// Generate is codegen/ptx's entry for one kernel; another producer asks it why no template
// takes a kernel (its error).
func Generate(k Kernel, t Target) (string, Launch, error) { return registered().Generate(k, t) }
