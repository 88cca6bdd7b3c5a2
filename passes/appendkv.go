package passes

import (
	"slices"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// appendKVPass moves the in-place cache updates of a decoding step into the split-KV attention
// kernel that reads the updated caches (docs/fusion.md, "Attention appends the cache rows"), as
// FlashAttention's flash_attn_with_kvcache takes k_new and v_new: every block reads the step's
// keys [p, p+T) from the update, the projection's output, instead of the cache, and one block
// per (batch entry, KV head) writes them into the cache. A layer then launches no update
// kernels: 0.96 µs each in a CUDA graph for a few KB of rows.
//
// An update kernel merges when the program donates its operand to its output (the cache is
// written in place; donations), its output's one reader is an attention kernel that the
// split-KV template takes and that reads it as K or V (splitkv.Appended), and it is no bind-time
// kernel. A prefill's updates stay kernels of their own: its attention is the prefill template.
func appendKVPass(st *State) error {
	kg := st.Kernels
	readers := kg.readers()
	alias := donations(kg)
	merged := map[*Kernel]bool{}
	for _, a := range kg.Kernels {
		if _, ok := decodePlan(a); !ok || a.BindTime {
			continue
		}
		var us []*Kernel
		for _, b := range a.Reads {
			u := b.Writer
			if u == nil || u.Kind != Update || u.BindTime || merged[u] || len(readers[b]) != 1 {
				continue
			}
			if in := updateOperand(u); in == nil || alias[b] != in {
				continue
			}
			us = append(us, u)
		}
		if len(us) == 0 {
			continue
		}
		m := withAppends(a, us)
		if appends(m) != len(us) || checkBody(m, kg.Bounds.withDefaults()) != nil {
			continue
		}
		*a = *m
		for _, u := range us {
			for _, b := range u.Writes {
				b.Writer = a
			}
			merged[u] = true
		}
	}
	if len(merged) == 0 {
		return nil
	}
	kg.Kernels = slices.DeleteFunc(kg.Kernels, func(k *Kernel) bool { return merged[k] })
	kg.renumber()
	if len(st.Graph.Dims) > 0 {
		// Over a symbolic batch the kernels the passes formed at the bound (a copy's output)
		// do not carry the buffers' sizes, which the compiler gives them; each merged kernel
		// passed checkBody above.
		return nil
	}
	return CheckKernels(kg)
}

// withAppends returns attention kernel a computing the update kernels us (each writing a cache
// a reads) itself: their bodies, then a's reading their results, a's outputs first.
func withAppends(a *Kernel, us []*Kernel) *Kernel {
	body := ir.NewGraph("kernel")
	m := &Kernel{Kind: Attention, Space: a.Space.Clone(), Origins: map[*ir.Value]*ir.Value{}, label: a.label + "_append"}
	vals := map[*Buffer]*ir.Value{}
	subst := map[*ir.Value]*ir.Value{}
	var copies []map[*ir.Value]*ir.Value
	for _, u := range us {
		um := copyBody(body, u, vals, map[*ir.Value]*ir.Value{}, &m.Reads)
		copies = append(copies, um)
		j := slices.Index(a.Reads, u.Writes[0])
		subst[a.Body.Inputs()[j]] = um[u.Body.Outputs[0].Value]
	}
	am := copyBody(body, a, vals, subst, &m.Reads)
	for i, k := range append(slices.Clone(us), a) {
		cm := am
		if i < len(us) {
			cm = copies[i]
		}
		for v, o := range k.Origins {
			if w := cm[v]; w != nil {
				m.Origins[w] = o
			}
		}
		for v, w := range cm { // copyBody types values at the bound: keep a symbolic batch's sizes
			if v.Type.Sym != nil && w.Type.Shape.Equal(v.Type.Shape) {
				w.Type.Sym = slices.Clone(v.Type.Sym)
			}
		}
		m.Ops = append(m.Ops, k.Ops...)
	}
	for i, o := range a.Body.Outputs {
		body.SetOutput(o.Name, am[o.Value])
		m.Writes = append(m.Writes, a.Writes[i])
	}
	for i, u := range us {
		o := u.Body.Outputs[0]
		body.SetOutput(o.Name, copies[i][o.Value])
		m.Writes = append(m.Writes, u.Writes[0])
	}
	for i, o := range body.Outputs { // a value the attention pass typed at the bound writes a symbolic buffer
		if b := m.Writes[i]; o.Value.Type.Sym == nil && b.Type.Sym != nil && o.Value.Type.Shape.Equal(b.Type.Shape) {
			o.Value.Type.Sym = slices.Clone(b.Type.Sym)
		}
	}
	m.Body = body
	return m
}

// appends counts the caches attention kernel k appends rows to itself, as codegen sees them.
func appends(k *Kernel) int {
	n := 0
	for _, v := range k.Body.Values {
		for i := 1; v.Op == ops.AttentionOp && i <= 2; i++ {
			if _, ok := splitkv.Appended(v, i); ok {
				n++
			}
		}
	}
	return n
}

// appendedBytes is what kernel k's in-place updates write: their rows.
func appendedBytes(k *Kernel) int64 {
	var n int64
	for _, o := range k.Body.Outputs {
		if v := o.Value; v.Op == ops.UpdateSliceOp {
			n += int64(v.Args[1].Type.Bytes())
		}
	}
	return n
}
