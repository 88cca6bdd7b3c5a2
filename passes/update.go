package passes

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// updateView reports whether an update kernel reads its update through view v (the K or V rows of
// a projection, split and transposed into [B, KVH, T, D]): v leads through views only to the
// update, never to the operand it writes over or the positions, which stay plain buffers.
func updateView(v *ir.Value, gr *group) bool {
	if !isView(v.Op) {
		return false
	}
	for u := range gr.members {
		if u.Op != ops.UpdateSliceOp || v == u.Args[0] || v == u.Args[2] {
			return false
		}
		for x := u.Args[1]; ; x = x.Args[0] {
			if x == v {
				return true
			}
			if !isView(x.Op) || !gr.views[x] {
				return false
			}
		}
	}
	return false
}

// updateOperand returns the buffer an update kernel's update_slice writes over (its first
// operand), or nil for any other kernel.
func updateOperand(k *Kernel) *Buffer {
	if k.Kind != Update {
		return nil
	}
	var name string
	for _, v := range k.Body.Values {
		if v.Op == ops.UpdateSliceOp {
			name = v.Args[0].Name
		}
	}
	for _, b := range k.Reads {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// donations finds the update kernels whose result may take the memory of their operand when that
// operand is a graph input and the result a graph output of its type, read by no other kernel
// and not itself an output: the program donates the input to the output (JAX's donate_argnums,
// XLA's input/output aliasing), as a KV cache kept as state is. It returns output → input.
func donations(kg *KernelGraph) map[*Buffer]*Buffer {
	readers := map[*Buffer]int{}
	for _, k := range kg.Kernels {
		for _, b := range k.Reads {
			readers[b]++
		}
	}
	for _, b := range kg.Outputs {
		readers[b]++ // an input that is an output keeps its value
	}
	alias := map[*Buffer]*Buffer{}
	taken := map[*Buffer]bool{}
	for _, k := range kg.Kernels {
		in := updateOperand(k)
		if in == nil || in.Kind != InputBuffer || readers[in] != 1 || taken[in] || k.BindTime {
			continue
		}
		for _, out := range k.Writes {
			if out.Kind == OutputBuffer && out.Type.Equal(in.Type) && alias[out] == nil {
				alias[out], taken[in] = in, true
				break
			}
		}
	}
	return alias
}

// updatesInPlace marks the update kernels that write over their operand's memory: a temp whose
// last reader they are (inPlace, from planMemory) or a donated input (alias).
func updatesInPlace(kg *KernelGraph, inPlace, alias map[*Buffer]*Buffer) {
	for _, k := range kg.Kernels {
		in := updateOperand(k)
		if in == nil {
			continue
		}
		k.InPlace = false
		for _, out := range k.Writes {
			if inPlace[out] == in || alias[out] == in {
				k.InPlace = true
			}
		}
	}
}

// updateSpace is what an update kernel's launch covers: the update alone when it writes in
// place, else the whole result (every element copied or updated).
func updateSpace(k *Kernel) ir.Shape {
	if k.InPlace {
		for _, v := range k.Body.Values {
			if v.Op == ops.UpdateSliceOp {
				return v.Args[1].Type.Shape
			}
		}
	}
	return k.Space
}
