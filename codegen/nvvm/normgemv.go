package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// normGEMVKernel computes a GEMV whose lhs is a LayerNorm or RMSNorm of buffers' rows
// (gemv.RowPrologue; codegen/ptx's gemvnorm.go) with this package's stand-in for the GEMV, the
// direct template (plan.DirectFallback: one thread per result, grid-stride, exact), behind
// codegen/ptx's row prologue: every block first reduces the M lhs rows over the full K, one
// reduce_sum after another, each with the row template's strided loop over its 256 threads and
// warp-then-block combine (codegen/ptx's order: the statistics are its bits), and thread 0 keeps
// each row's result in shared memory, which the later reductions and the products' lhs read.
// The product then agrees with codegen/ptx's f32 GEMV within tolerance, as a plain GEMV does;
// --backend auto measures both.
func (md *module) normGEMVKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	var dot *irg.Value
	for _, v := range plan.Live(g) {
		if v.Op == "dot_general" {
			dot = v
		}
	}
	var reds []*irg.Value
	if dot != nil {
		reds = gemv.RowPrologue(dot)
	}
	if len(reds) == 0 {
		return nil, plan.Launch{}, fmt.Errorf("the kernel has no GEMV with a norm prologue")
	}
	c := plan.DirectFallback(plan.Contraction{Dot: dot})
	T := c.Block[0]
	lhs := dot.Args[0].Type.Shape
	K := lhs[lhs.Rank()-1]
	M := lhs.NumElements() / max(1, K)
	args, work, err := symNormGEMVArgs(k, c, M) // symgemvnorm.go
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg := md.newKernel(k, args)
	slots := md.sharedSlots(k.Name, T/32)
	tid := kg.sreg("tid.x")
	lane, warp := kg.b.NewAnd(tid, ci(31)), kg.b.NewLShr(tid, ci(5))
	kg.at = map[*irg.Value]func(*index) value.Value{}
	for i, red := range reds {
		accT, combine, _ := plan.Accumulator(red)
		acc := kg.alloca(regType(accT))
		rows := md.sharedArray(fmt.Sprintf("%s_prologue%d", k.Name, i), M, regType(red.Type.DType), 8)
		row := func(m value.Value) value.Value {
			p := kg.b.NewGetElementPtr(rows.ContentType, rows, ci(0), m)
			p.InBounds = true
			return p
		}
		src := red.Args[0].Type.Shape
		for m := range M {
			kg.prologueRow(dot, m, M, func() {
				err = kg.fold(red, acc, tid, ci(T), K, func(r value.Value) *index { return newIndexLin(src, kg.add(ci(m*K), r)) })
				if err != nil {
					return
				}
				var total value.Value
				total, err = kg.blockCombine(accT, combine, kg.b.NewLoad(regType(accT), acc), lane, warp, slots, T/32)
				if err != nil {
					return
				}
				kg.branch(kg.b.NewICmp(enum.IPredEQ, tid, ci(0)), "hold", func() {
					kg.b.NewStore(kg.cast(accT, total, red.Type.DType), row(ci(m)))
				})
			})
			if err != nil {
				return nil, plan.Launch{}, err
			}
		}
		kg.barrier()
		// The reduction's index is its row's: keepdims leaves the reduced dim 1.
		kg.at[red] = func(x *index) value.Value { return kg.b.NewLoad(regType(red.Type.DType), row(kg.lin(x))) }
	}
	rows, outs := rowOutputs(g, dot) // gemvnormout.go
	if err := kg.storePrologueRows(dot, rows, M, tid, T); err != nil {
		return nil, plan.Launch{}, err
	}
	start := kg.add(kg.b.NewMul(kg.sreg("ctaid.x"), ci(T)), tid)
	step := kg.b.NewMul(kg.sreg("nctaid.x"), ci(T))
	err = kg.directElementsTo(dot, start, step, false, outs)
	kg.at = nil
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: c.Grid, Block: c.Block, Params: args, Work: work}, nil
}
