package gemv

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// MaxPrologueRows is the most rows a GEMV with a norm prologue takes: the template's (MaxM), a
// decode step batched over 8 sequences or packed in 8 slots.
const MaxPrologueRows = MaxM

// MaxUnstagedRows is the most rows a prologue takes whose k loop evaluates the norm from its
// buffers, or that gathers its rows: above it, a thread's accumulators (up to 8 per row for
// 16-bit weights stored [K,N]) beside LayerNorm's centring, or a gather's index and bounds
// arithmetic, per row spill on sm_80/sm_90. More rows take a prologue only when it is a LayerNorm
// (two reductions) whose rows are staged in shared memory (StagedRows) without a gather: an
// RMSNorm of 5 f32 rows of 256, even staged, spills 4 bytes on sm_90 (ptxas at 48 registers).
const MaxUnstagedRows = 4

// MaxStagedBytes bounds the rows a row prologue keeps in shared memory, as f32 (StagedRows):
// 32 KB, two thirds of a block's static shared memory (the GEMV's own takes at most 8.4 KB);
// 8 rows of 1024 elements (GPT-2 small's 768 at 8 rows), or 8192 elements of one row.
const MaxStagedBytes = 32 << 10

// RowPrologue returns the reductions of dot's lhs when the lhs is a row prologue: a norm of its
// rows computed in the kernel (LayerNorm's mean and variance, RMSNorm's mean square, then the
// elementwise normalization with gamma and beta) from buffers, so that the norm's output never
// goes to memory. Each block reduces its rows over the full K before its k loop (the rows are
// small and read from L2 by every block), then normalizes the lhs as it loads it.
//
// The lhs qualifies when the product has no batch dims and contracts the lhs's last dim (K)
// only, and every value it is computed from is a buffer, a literal, a view, an elementwise op,
// a gather of rows by index that no reduction feeds (a decode step's embeddings), or a
// reduce_sum over the last dim (kept) of a value laid out as the lhs's rows: its last dim K and
// its elements the lhs's (a reshape such as [1,1,K] → [1,K] may lie between the norm and the
// product), so that row m's element k is linear element m·K + k of every such value. The
// reductions are returned in graph order (an operand's reductions before its own); nil means
// no prologue, as for a product of more than MaxPrologueRows rows.
func RowPrologue(dot *ir.Value) []*ir.Value {
	reds, _ := rowPrologue(dot)
	return reds
}

// RowOutput reports whether v, a value of a GEMV kernel other than the product's result, can
// be one of its outputs: a value of dot's row prologue (RowPrologue) that no reduction feeds,
// laid out as the lhs's rows (the embeddings that a norm normalizes, gathered and summed). One
// block of the GEMV writes it before its k loop, so that the row kernel that wrote it beside the
// norm's output disappears too; the kernels reading it come later.
func RowOutput(dot, v *ir.Value) bool {
	reds, vals := rowPrologue(dot)
	return len(reds) > 0 && rowOutput(dot, v, vals)
}

// rowOutput is RowOutput over the prologue's values.
func rowOutput(dot, v *ir.Value, vals map[*ir.Value]bool) bool {
	dep, in := vals[v]
	k := dot.Args[0].Type.Shape[dot.Args[0].Type.Shape.Rank()-1]
	s := v.Type.Shape
	return in && !dep && s.Rank() > 0 && s[s.Rank()-1] == k && s.NumElements() == dot.Args[0].Type.Shape.NumElements() &&
		v.Op != ir.OpInput && v.Op != ir.OpParam && v.Op != "constant"
}

// rowPrologue returns RowPrologue's reductions and every value the lhs is computed from, each
// mapped to whether a reduction feeds it; nil reductions for no prologue.
func rowPrologue(dot *ir.Value) ([]*ir.Value, map[*ir.Value]bool) {
	p, ok := Fits(dot)
	if !ok || p.M > MaxPrologueRows {
		return nil, nil
	}
	reds, vals := prologueValues(dot)
	if len(reds) == 0 || p.M <= MaxUnstagedRows || len(reds) > 1 && stagedRows(dot, reds, vals) != nil && !gathers(vals) {
		return reds, vals
	}
	return nil, nil // above MaxUnstagedRows, only a LayerNorm's staged rows without gathers
}

// prologueValues is rowPrologue at any row count.
func prologueValues(dot *ir.Value) ([]*ir.Value, map[*ir.Value]bool) {
	lhs := dot.Args[0]
	rank := lhs.Type.Shape.Rank()
	if rank == 0 {
		return nil, nil
	}
	k := lhs.Type.Shape[rank-1]
	m := lhs.Type.Shape.NumElements() / max(k, 1)
	rows := func(s ir.Shape) bool { return s.Rank() > 0 && s[s.Rank()-1] == k && s.NumElements() == m*k }
	perRow := func(s ir.Shape) bool { return s.Rank() > 0 && s[s.Rank()-1] == 1 && s.NumElements() == m }
	if k == 0 || len(dot.Attrs.Ints("lhs_batch")) > 0 || !slices.Equal(dot.Attrs.Ints("lhs_contract"), []int{rank - 1}) {
		return nil, nil
	}
	var reds []*ir.Value
	// dep[v]: v is computed from a reduction. Such values keep the rows' layout (rows or perRow),
	// so that the kernel can hold them per row; views of the rest read buffers by index.
	dep := map[*ir.Value]bool{}
	seen := map[*ir.Value]bool{}
	var walk func(v *ir.Value) bool
	walk = func(v *ir.Value) bool {
		if seen[v] {
			return true
		}
		seen[v] = true
		for _, a := range v.Args {
			if !walk(a) {
				return false
			}
			dep[v] = dep[v] || dep[a]
		}
		s := v.Type.Shape
		switch {
		case v.Op == ir.OpInput || v.Op == ir.OpParam || v.Op == "constant":
			return true
		case v.Op == "reduce_sum":
			in := v.Args[0].Type.Shape
			if !rows(in) || s.Rank() != in.Rank() || !slices.Equal(v.Attrs.Ints("axes"), []int{in.Rank() - 1}) {
				return false
			}
			reds = append(reds, v)
			dep[v] = true
			return true
		case !dep[v]:
			// A gather reads its rows by index (bounds checked, as every gather is): the
			// embeddings of a decode step's tokens.
			return isViewOp(v.Op) || ops.ClassOf(v.Op) == ops.Elementwise || v.Op == "gather"
		case ops.ClassOf(v.Op) == ops.Elementwise, v.Op == "reshape":
			in := v.Args[0].Type.Shape
			return rows(s) && rows(in) || perRow(s) && perRow(in)
		case v.Op == "broadcast_in_dim":
			in := v.Args[0].Type.Shape
			return perRow(in) && (rows(s) || perRow(s)) && identity(v.Attrs.Ints("dims"), in.Rank(), s.Rank())
		}
		return false
	}
	if !walk(lhs) || len(reds) == 0 {
		return nil, nil
	}
	vals := map[*ir.Value]bool{}
	for v := range seen {
		vals[v] = dep[v]
	}
	return reds, vals
}

// StagedRows returns the value a GEMV's row prologue keeps in shared memory, as f32, or nil:
// the first reduction's operand, when every later reduction reads it again (LayerNorm's
// variance reads x after its mean), or else gathered rows that every reduction and the lhs read
// (RMSNorm of a decode step's embeddings: the gather and its bounds check run once per element,
// not in the k loop), when its elements fit in MaxStagedBytes. Each block then reads it from L2
// once, not once per reduction, and its later reductions and its k loop read it from shared
// memory.
func StagedRows(dot *ir.Value) *ir.Value {
	reds, vals := rowPrologue(dot)
	return stagedRows(dot, reds, vals)
}

// stagedRows is StagedRows over the prologue's reductions and values.
func stagedRows(dot *ir.Value, reds []*ir.Value, vals map[*ir.Value]bool) *ir.Value {
	var s *ir.Value
	if len(reds) >= 2 {
		s = reds[0].Args[0]
		for _, r := range reds[1:] {
			if !reaches(r.Args[0], s, map[*ir.Value]bool{}) {
				return nil
			}
		}
	} else if len(reds) == 1 {
		s = gatheredRows(dot, reds, vals)
	}
	if s == nil || 4*s.Type.Shape.NumElements() > MaxStagedBytes {
		return nil
	}
	return s
}

// gatheredRows returns the prologue's value computed from a gather, laid out as the lhs's rows
// and fed by no reduction, that every reduction's operand and the lhs read and that reads every
// other such value (the sum of two gathers rather than either), or nil.
func gatheredRows(dot *ir.Value, reds []*ir.Value, vals map[*ir.Value]bool) *ir.Value {
	var cands []*ir.Value
	for v, dep := range vals {
		if dep || v.Op == ir.OpInput || v.Op == ir.OpParam || v.Op == "constant" || !rowOutput(dot, v, vals) || !fromGather(v) {
			continue
		}
		ok := reaches(dot.Args[0], v, map[*ir.Value]bool{})
		for _, r := range reds {
			ok = ok && reaches(r.Args[0], v, map[*ir.Value]bool{})
		}
		if ok {
			cands = append(cands, v)
		}
	}
	for _, c := range cands {
		top := true
		for _, o := range cands {
			top = top && reaches(c, o, map[*ir.Value]bool{})
		}
		if top {
			return c
		}
	}
	return nil
}

// gathers reports whether a prologue's values include a gather. Above MaxUnstagedRows its rows'
// index and bounds arithmetic spill on sm_90 even with the rows staged (5 f32 rows of 768): the
// decode step's first norm keeps its kernel there.
func gathers(vals map[*ir.Value]bool) bool {
	for v := range vals {
		if v.Op == "gather" {
			return true
		}
	}
	return false
}

// fromGather reports whether v is a gather or computed from one.
func fromGather(v *ir.Value) bool {
	if v.Op == "gather" {
		return true
	}
	return slices.ContainsFunc(v.Args, fromGather)
}

// reaches reports whether s is v or one of its operands, transitively, other than through a
// reduction (the prologue holds a reduction's per-row values: it does not read its operand
// again).
func reaches(v, s *ir.Value, seen map[*ir.Value]bool) bool {
	if v == s {
		return true
	}
	if seen[v] || v.Op == "reduce_sum" {
		return false
	}
	seen[v] = true
	for _, a := range v.Args {
		if reaches(a, s, seen) {
			return true
		}
	}
	return false
}

// identity reports whether a broadcast's dims map operand dim i to result dim i, of equal ranks.
func identity(dims []int, from, to int) bool {
	if from != to || len(dims) != from {
		return false
	}
	for i, d := range dims {
		if d != i {
			return false
		}
	}
	return true
}

func isViewOp(op string) bool {
	switch op {
	case "transpose", "slice", "broadcast_in_dim", "reshape":
		return true
	}
	return false
}

// InRowPrologue reports whether v is a value dot's row prologue computes (RowPrologue).
func InRowPrologue(dot, v *ir.Value) bool {
	reds, vals := rowPrologue(dot)
	_, in := vals[v]
	return len(reds) > 0 && in
}
