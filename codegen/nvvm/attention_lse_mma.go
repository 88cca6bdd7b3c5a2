package nvvm

import (
	"math"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	irg "github.com/gcomp/gcomp/ir"
)

// The tensor-core attention forward writing its rows' log-sum-exp beside the result (a train
// step's forward, whose backward reads it: plan.ForwardLSE), as codegen/ptx's attention_mma.go
// does: the template of attention_mma.go (f16/bf16, f32 on tf32 tensor cores) unchanged, and
// after each row's output the quad's first thread stores (m·k2 + log₂ l)·ln 2, m the row's
// running maximum in the units the exponent scales by k2 (scale·log₂ e where the scale is
// folded, else 1), l the quad's sum. lg2.approx.f32 is inline assembly (libNVVM's llvm.log2.f32
// would be libdevice's correctly rounded one), the rest llvm.fma.f32 and fmul in codegen/ptx's
// order, so the LSE is its bit for bit. A row with no visible key stores −inf (m = −inf, l = 0).

// storeRowLSE writes a row's log-sum-exp from the quad's first thread (tq = 0) where ok (the row
// is below L): m and l are the row's maximum and quad-summed sum, el its index in the [B, H, L]
// output.
func (w *mmaAttn) storeRowLSE(m, l value.Value, k2 float64, tq, ok, el value.Value) {
	kg := w.kg
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	kg.branch(kg.b.NewAnd(kg.b.NewICmp(enum.IPredEQ, tq, ci(0)), ok), "lse", func() {
		x := kg.asmRet(types.Float, "lg2.approx.f32 $0, $1;", "=f,f", l)
		x = kg.b.NewFMul(kg.b.NewCall(fma, m, f32(k2), x), f32(math.Ln2))
		kg.b.NewStore(x, kg.elemPtr(irg.F32, w.lse, el)).Align = 4
	})
}
