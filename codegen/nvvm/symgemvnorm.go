package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir/enum"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// A GEMV with a norm prologue at symbolic sizes (a packed decode step's, as codegen/ptx's
// symgemvnorm.go): the kernel's rows are the product's M, and the direct template behind the
// prologue (normgemv.go) runs over the run's result elements, its size parameter (symDirect:
// the parameters are codegen/ptx's, the work the direct template's, as a plain GEMV's at
// symbolic sizes). The prologue reduces and holds rows 0..m−1 of the run only, each behind a
// branch uniform over the launch (row i runs when i·N is below the run's elements, N the
// product's columns), so the barriers of a skipped row's block reduction are skipped by every
// thread and nothing past the run's rows is read. Each row's arithmetic is the static kernel's:
// a run at m rows gives the bits of the static kernel of m rows.

// symNormGEMVArgs is the parameters and work of a GEMV with a norm prologue of M rows whose
// direct template is c: plan.Params and no work for a static kernel, symDirect's for a symbolic
// one, whose rows must be the product's M.
func symNormGEMVArgs(k plan.Kernel, c plan.Contraction, M int) ([]plan.Arg, *plan.SymWork, error) {
	if !k.Symbolic {
		return plan.Params(k.Graph), nil, nil
	}
	if n := c.Dot.Type.Shape.NumElements(); k.Rows <= 0 || M%k.Rows != 0 || n%M != 0 {
		return nil, nil, fmt.Errorf("a GEMV with a norm prologue of %d rows over %d symbolic rows does not run at symbolic sizes: its rows must be the product's", M, k.Rows)
	}
	return symDirect(k, c)
}

// prologueRow emits body, row m's reduction of a prologue of M rows for product dot: as is at the
// bound's sizes, behind the run's rows at symbolic ones (m·N below the run's result elements).
func (kg *kgen) prologueRow(dot *irg.Value, m, M int, body func()) {
	if kg.size == nil {
		body()
		return
	}
	n := dot.Type.Shape.NumElements() / M
	kg.branch(kg.b.NewICmp(enum.IPredULT, ci(m*n), kg.size), "prologue_row", body)
}
