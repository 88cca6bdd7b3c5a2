package passes

import (
	"slices"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// normGEMVPass moves a norm into the GEMVs that read it (docs/fusion.md, "Norm prologues"): a
// row kernel (LayerNorm, RMSNorm) whose one output is a temp that only contraction kernels
// read, each as its product's lhs only, becomes each one's prologue when the GEMV template
// takes every merged product (gemv.Of with gemv.RowPrologue: a product of at most gemv.MaxM rows contracting
// the norm's reduced dim). Each GEMV block then recomputes the norm's statistics of its rows,
// read from L2 (the cost model counts it), and the norm's output never goes to memory: in LLM
// decoding that removes a launch of about 1 µs per norm for a few hundred ns of L2 reads.
// Several readers (Llama's q, k and v projections) each recompute the norm. A norm
// whose output has another reader (a graph output, another kernel, an epilogue) keeps its
// kernel. The row kernel's other writes, values of the prologue laid out as its rows (the
// decode step's first norm writes the embeddings it gathers for the residual: gemv.RowOutput),
// go to the first reader, which writes them from one block, when every kernel reading them comes
// after it.
func normGEMVPass(st *State) error {
	kg := st.Kernels
	readers := kg.readers()
	bounds := kg.Bounds.withDefaults()
	merged := map[*Kernel]bool{}
	at := map[*Kernel]int{}
	for i, k := range kg.Kernels {
		at[k] = i
	}
	for _, r := range kg.Kernels {
		if r.Kind != Row || len(r.Writes) == 0 {
			continue
		}
		for bi, b := range r.Writes {
			if b.Kind != TempBuffer {
				continue
			}
			// r's other writes (the embeddings the first norm normalizes) go to the first
			// GEMV, which writes them from one block, when every kernel reading them comes after it.
			var extra []int
			for j := range r.Writes {
				if j != bi {
					extra = append(extra, j)
				}
			}
			var ms []*Kernel
			for i, c := range readers[b] {
				var m *Kernel
				if i == 0 {
					m = withNormPrologue(c, slices.Index(c.Reads, b), r, bi, extra)
				} else {
					m = withNormPrologue(c, slices.Index(c.Reads, b), r, bi, nil)
				}
				if c.Kind != Contraction || m == nil || checkBody(m, bounds) != nil {
					ms = nil
					break
				}
				ms = append(ms, m)
			}
			if len(ms) == 0 || !readAfter(r, extra, readers, at, readers[b][0]) || !prologuesPay(r, ms, st.opt.TF32) {
				continue
			}
			for i, c := range readers[b] {
				*c = *ms[i] // the buffers' writer stays c
			}
			for _, j := range extra {
				r.Writes[j].Writer = readers[b][0]
			}
			merged[r] = true
			break
		}
	}
	if len(merged) == 0 {
		return nil
	}
	kg.Kernels = slices.DeleteFunc(kg.Kernels, func(k *Kernel) bool { return merged[k] })
	kg.renumber()
	if len(st.Graph.Dims) > 0 {
		// Over a symbolic batch the other kernels' bodies do not carry the buffers' sizes
		// (appendkv.go); each merged kernel passed checkBody above.
		return nil
	}
	return CheckKernels(kg)
}

// symbolicTypes gives body's inputs and outputs the symbolic sizes of m's buffers, which
// copyBody drops: over a symbolic batch the merged kernel reads and writes the buffers its
// two kernels did.
func symbolicTypes(m *Kernel, body *ir.Graph) {
	for j, in := range body.Inputs() {
		if b := m.Reads[j]; b.Type.Sym != nil && in.Type.Shape.Equal(b.Type.Shape) {
			in.Type.Sym = slices.Clone(b.Type.Sym)
		}
	}
	for i, o := range body.Outputs {
		if b := m.Writes[i]; o.Value.Type.Sym == nil && b.Type.Sym != nil && o.Value.Type.Shape.Equal(b.Type.Shape) {
			o.Value.Type.Sym = slices.Clone(b.Type.Sym)
		}
	}
}

// readAfter reports whether every kernel reading r's writes extra comes after c, which is to
// write them in r's place, and none of them is a GEMV taking r's norm.
func readAfter(r *Kernel, extra []int, readers map[*Buffer][]*Kernel, at map[*Kernel]int, c *Kernel) bool {
	for _, j := range extra {
		if r.Writes[j].Kind != TempBuffer {
			return false
		}
		for _, k := range readers[r.Writes[j]] {
			if at[k] <= at[c] {
				return false
			}
		}
	}
	return true
}

// withNormPrologue returns contraction kernel c with row kernel r, the writer of c's j-th read
// (r's out-th output), computed inside it, or nil if the GEMV template would not take the result
// with r's output as its lhs's prologue. c also writes r's writes extra (indexes), which must be
// values of the prologue that the GEMV writes beside its result (gemv.RowOutput).
func withNormPrologue(c *Kernel, j int, r *Kernel, out int, extra []int) *Kernel {
	in := c.Body.Inputs()[j]
	users := map[*ir.Value][]*ir.Value{}
	var dot *ir.Value
	for _, v := range c.Body.Values {
		for _, a := range v.Args {
			users[a] = append(users[a], v)
		}
		if v.Op == "dot_general" {
			dot = v
		}
	}
	// The norm's output reaches the product's lhs through reshapes only, and has no other use:
	// otherwise it must stay in memory.
	for v := in; ; {
		us := users[v]
		if len(us) != 1 || dot == nil {
			return nil
		}
		if u := us[0]; u == dot {
			if dot.Args[0] != v || dot.Args[1] == v {
				return nil
			}
			break
		} else if u.Op != "reshape" {
			return nil
		}
		v = us[0]
	}
	body := ir.NewGraph("kernel")
	m := &Kernel{Kind: Contraction, Space: c.Space.Clone(), Origins: map[*ir.Value]*ir.Value{}, label: r.label + "_" + c.label}
	vals := map[*Buffer]*ir.Value{}
	rm := copyBody(body, r, vals, map[*ir.Value]*ir.Value{}, &m.Reads)
	cm := copyBody(body, c, vals, map[*ir.Value]*ir.Value{in: rm[r.Body.Outputs[out].Value]}, &m.Reads)
	for _, km := range []struct {
		k *Kernel
		m map[*ir.Value]*ir.Value
	}{{r, rm}, {c, cm}} {
		for v, o := range km.k.Origins {
			if w := km.m[v]; w != nil {
				m.Origins[w] = o
			}
		}
	}
	for i, o := range c.Body.Outputs {
		body.SetOutput(o.Name, cm[o.Value])
		m.Writes = append(m.Writes, c.Writes[i])
	}
	var rowOuts []*ir.Value
	for _, i := range extra {
		o := r.Body.Outputs[i]
		body.SetOutput(o.Name, rm[o.Value])
		m.Writes = append(m.Writes, r.Writes[i])
		rowOuts = append(rowOuts, rm[o.Value])
	}
	symbolicTypes(m, body)
	m.Body = body
	m.Ops = append(slices.Clone(r.Ops), c.Ops...)
	reduces := 0
	for _, v := range body.Values {
		if ops.ClassOf(v.Op) == ops.Reduce {
			reduces++
		}
	}
	for _, v := range body.Values {
		if v.Op == "dot_general" && reduces > 0 && len(gemv.RowPrologue(v)) == reduces {
			for _, o := range rowOuts {
				if !gemv.RowOutput(v, o) {
					return nil
				}
			}
			if _, ok := gemvPlan(m); ok {
				return m // the buffers' writer stays c, which takes m's place
			}
		}
	}
	return nil
}

// prologuesPay reports whether the cost model says the merged kernels ms, which recompute norm
// r's statistics in every block, run faster in a CUDA graph than r's own kernel and launch
// before the GEMVs that read its output: the LM head's 1571 blocks each reading the row twice
// from L2 cost more than the launch they save.
func prologuesPay(r *Kernel, ms []*Kernel, tf32 bool) bool {
	extra := 0.0
	for _, m := range ms {
		extra += float64(prologueL2Bytes(m)) / l2BytesPerSec * 1e6
	}
	return extra < graphLaunchUS+kernelCost(r, tf32).ModeledTimeUS
}

// l2BytesPerSec is the L2 read bandwidth the cost model assumes for an H100 SXM (NVIDIA does not
// publish one; about 1.6× its HBM's, a conservative reading of published microbenchmarks).
const l2BytesPerSec = 5.5e12

// prologueL2Bytes is what a GEMV's norm prologue reads from L2 on top of the kernel's DRAM
// traffic: every block reads its M rows of K once per reduction before its k loop, or once when
// it keeps them in shared memory (gemv.StagedRows: LayerNorm's two reductions); the rows' DRAM
// bytes are counted once, as the kernel's reads. 0 for a kernel without a prologue.
func prologueL2Bytes(k *Kernel) int64 {
	p, ok := gemvPlan(k)
	if !ok {
		return 0
	}
	for _, v := range k.Body.Values {
		if v.Op == "dot_general" {
			if s := gemv.StagedRows(v); s != nil {
				return int64(p.Blocks()) * int64(s.Type.Bytes())
			}
			var n int64
			for _, r := range gemv.RowPrologue(v) {
				n += int64(p.Blocks()) * int64(r.Args[0].Type.Bytes())
			}
			return n
		}
	}
	return 0
}

// gemvDot returns the product of contraction kernel k when the GEMV template takes it with a row
// prologue (gemv.RowPrologue), or nil.
func gemvDot(k *Kernel) *ir.Value {
	if _, ok := gemvPlan(k); !ok {
		return nil
	}
	for _, v := range k.Body.Values {
		if v.Op == "dot_general" && len(gemv.RowPrologue(v)) > 0 {
			return v
		}
	}
	return nil
}

// gemvRowOutput reports whether k is a GEMV whose row prologue computes v, which it writes from
// one block (gemv.RowOutput): the embeddings beside their norm.
func gemvRowOutput(k *Kernel, v *ir.Value) bool {
	dot := gemvDot(k)
	return dot != nil && gemv.RowOutput(dot, v)
}

// gemvPrologueGather reports whether gather v is a value of k's GEMV row prologue, which reads
// its rows by index before the k loop; any other gather in a contraction kernel is not taken.
func gemvPrologueGather(k *Kernel, v *ir.Value) bool {
	dot := gemvDot(k)
	return dot != nil && gemv.InRowPrologue(dot, v)
}
