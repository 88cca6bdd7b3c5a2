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
// whose output has another reader (a graph output, another kernel, an epilogue) keeps its kernel. codegen/nvvm has no GEMV template: the compiler disables the pass for it.
func normGEMVPass(st *State) error {
	kg := st.Kernels
	readers := kg.readers()
	bounds := kg.Bounds.withDefaults()
	merged := map[*Kernel]bool{}
	for _, r := range kg.Kernels {
		if r.Kind != Row || len(r.Writes) != 1 || r.Writes[0].Kind != TempBuffer {
			continue
		}
		b := r.Writes[0]
		var ms []*Kernel
		for _, c := range readers[b] {
			m := withNormPrologue(c, slices.Index(c.Reads, b), r)
			if c.Kind != Contraction || m == nil || checkBody(m, bounds) != nil {
				ms = nil
				break
			}
			ms = append(ms, m)
		}
		if len(ms) == 0 || !prologuesPay(r, ms, st.opt.TF32) {
			continue
		}
		for i, c := range readers[b] {
			*c = *ms[i] // the buffers' writer stays c
		}
		merged[r] = true
	}
	if len(merged) == 0 {
		return nil
	}
	kg.Kernels = slices.DeleteFunc(kg.Kernels, func(k *Kernel) bool { return merged[k] })
	kg.renumber()
	return CheckKernels(kg)
}

// withNormPrologue returns contraction kernel c with row kernel r, the writer of c's j-th read,
// computed inside it, or nil if the GEMV template would not take the result with r's output as
// its lhs's prologue.
func withNormPrologue(c *Kernel, j int, r *Kernel) *Kernel {
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
	cm := copyBody(body, c, vals, map[*ir.Value]*ir.Value{in: rm[r.Body.Outputs[0].Value]}, &m.Reads)
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
