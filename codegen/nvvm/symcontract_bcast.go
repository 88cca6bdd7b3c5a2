package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Epilogue broadcasts of tensors at the run's sizes beside a symbolic batched product, as
// codegen/ptx's symcontract_bcast.go: a mask [b, 1, t, seq] over the heads of q·kᵀ
// [b, h, t, seq], a bias [seq] or [t, 1] along its rows. The tensor is contiguous at the run's
// sizes, so the bound's strides would read the wrong element. The epilogue knows every
// coordinate of the result's element (the batch's from grid.z, the row and the column: lanesAt);
// the broadcast maps them to the tensor's (a dim of size 1 reads coordinate 0: stride 0), whose
// linear index is taken at the run's strides, evaluated from the dims' parameters once in the
// prologue. The tiled epilogue (lanesAt, bindAndStore) is FFMA's and tensor cores' both, so
// either template reads broadcasts so by calling symBroadcasts in its prologue; this package's
// own symbolic products are FFMA's (symcontract.go), a tensor-core one is borrowed
// (fallback_contract.go: broadcastsEpilogue).

// symBroadcasts binds (kg.at) each epilogue broadcast of a buffer whose sizes are symbolic, read
// element by element at the run's strides; it runs in the entry block, where it evaluates the
// buffers' strides so that they dominate every element.
func (mm *gemm) symBroadcasts() error {
	kg, sv := mm.kg, mm.symv
	chain := operandChain(mm.p.Dot)
	for _, v := range kg.g.Values {
		if chain[v] || v.Op != "broadcast_in_dim" || !symbolicSizes(v.Args[0], sv.sizes) {
			continue
		}
		buf := v.Args[0]
		if !buffer(buf) {
			return fmt.Errorf("an epilogue broadcast of a computed value at symbolic sizes does not run beside a batched product")
		}
		if err := sv.check(v); err != nil {
			return err
		}
		in := plan.SymSizes(buf, sv.sizes)
		st := make([]value.Value, len(in))
		for i, e := range plan.SymContiguous(in) {
			if !plan.IsOne(in[i]) {
				st[i] = sv.eval(e)
			}
		}
		if kg.at == nil {
			kg.at = map[*irg.Value]func(*index) value.Value{}
		}
		kg.at[v] = func(x *index) value.Value {
			c := make([]value.Value, len(x.shape))
			for d := range c {
				c[d] = kg.coord(x, d)
			}
			var lin value.Value = ci(0)
			for i, b := range sv.operandCoords(v, c) {
				if st[i] != nil {
					lin = kg.add(sv.mul(b, st[i]), lin)
				}
			}
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

// ownsBroadcasts reports whether k's batched product is one whose broadcast epilogue this
// package reads (symBroadcasts): an FFMA product contracting a symbolic dim or with a symbolic
// free dim on the right (symContract takes it). Tensor-core ones stay codegen/ptx's.
func ownsBroadcasts(k plan.Kernel, t plan.Target) bool {
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
		return err == nil && c.Kind == "ffma"
	}
	return false
}
