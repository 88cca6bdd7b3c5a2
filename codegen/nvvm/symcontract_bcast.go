package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Epilogues reading a tensor at the run's sizes through views beside a symbolic batched product,
// as codegen/ptx's symcontract_bcast.go: a mask [b, 1, t, seq] broadcast over the heads of q·kᵀ
// [b, h, t, seq], a bias [seq] or [t, 1] along its rows, a mask transposed (or sliced) before its
// broadcast, a residual [b·t, d] reshaped to scores·V's [b, t, d]. The tensor is contiguous at the
// run's sizes, so the bound's strides would read the wrong element. The epilogue knows every
// coordinate of the result's element (the batch's from grid.z, the row and the column: lanesAt);
// the chain of views maps them down to the buffer's at the run's sizes (symView.lin: a transpose
// permutes them, a broadcast dim of size 1 reads coordinate 0, a reshape linearizes and
// delinearizes at the run, a slice offsets), whose linear index is taken at the run's strides,
// evaluated from the dims' parameters. The tiled epilogue (lanesAt, bindAndStore) is FFMA's
// (symcontract.go) and tensor cores' (symcontract_mma.go) both, so either template reads views
// so by calling symViews in its prologue, and the element it reads is codegen/ptx's.

// symViews checks each epilogue view at symbolic sizes (a chain of views of a buffer, in
// codegen/ptx's words) and binds (kg.at) each top of such a chain, read element by element at
// the run's sizes.
func (mm *gemm) symViews() error {
	kg, sv := mm.kg, mm.symv
	chain := operandChain(mm.p.Dot)
	for _, v := range kg.g.Values {
		if chain[v] || sv.sizes[v] == nil || !isView(v) {
			continue
		}
		if !buffer(viewRoot(v)) {
			return fmt.Errorf("an epilogue %s of a computed value at symbolic sizes does not run beside a batched product", v.Op)
		}
		if err := sv.check(v); err != nil {
			return err
		}
	}
	for _, v := range plan.ViewTops(kg.g, sv.sizes) {
		if chain[v] {
			continue
		}
		if kg.at == nil {
			kg.at = map[*irg.Value]func(*index) value.Value{}
		}
		kg.at[v] = func(x *index) value.Value {
			c := make([]value.Value, len(x.shape))
			for d := range c {
				c[d] = kg.coord(x, d)
			}
			buf, lin := sv.lin(v, c)
			return kg.load(buf.Type.DType, kg.ptr[buf], lin)
		}
	}
	return nil
}

// operandChain is the values product dot's operands are read through, down to their buffers.
func operandChain(dot *irg.Value) map[*irg.Value]bool {
	chain := map[*irg.Value]bool{}
	for _, a := range dot.Args {
		for u := a; ; u = u.Args[0] {
			chain[u] = true
			if len(u.Args) == 0 {
				break
			}
		}
	}
	return chain
}

// symbolicSizes reports whether v has a symbolic size in sizes (a static bias broadcast does
// not: the bound's strides are the run's).
func symbolicSizes(v *irg.Value, sizes map[*irg.Value][]sym.Expr) bool {
	return slices.ContainsFunc(plan.SymSizes(v, sizes), func(e sym.Expr) bool { return !isConst(e) })
}

// ownsViews reports whether k's batched product is one whose epilogue views this package reads
// at the run's sizes (symViews): a tiled product (FFMA or tensor cores) contracting a symbolic
// dim or with a symbolic free dim on the right, which symContract takes.
func ownsViews(k plan.Kernel, t plan.Target) bool {
	for _, v := range k.Graph.Values {
		if v.Op != "dot_general" || len(v.Attrs.Ints("lhs_batch")) == 0 {
			continue
		}
		at := v.Attrs
		ls, rs := plan.SymSizes(v.Args[0], k.Sizes), plan.SymSizes(v.Args[1], k.Sizes)
		if isConst(plan.SymProduct(ls, at.Ints("lhs_contract"))) && isConst(plan.SymProduct(rs, at.Ints("rhs_contract"))) &&
			isConst(plan.SymFree(rs, at.Ints("rhs_batch"), at.Ints("rhs_contract"))) {
			return false // M or the batch symbolic alone: symgemm.go, whose epilogue reads at the bound's
		}
		c, err := plan.ContractionPlan(k, t)
		return err == nil && (c.Kind == "ffma" || c.Kind == "tensor core")
	}
	return false
}
