package compiler

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/custom"
	"github.com/gcomp/gcomp/codegen/nvrtc"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// customKernel is a custom kernel of the kernel graph with its unit of code.
type customKernel struct {
	index int // in the kernel graph
	k     *passes.Kernel
	op    *ir.Value // the custom op in k.Body
	pos   string    // where the model declared it
	unit  *custom.Unit
}

// buildCustom compiles the custom kernels of kg. NVRTC is opened only when one of them is
// CUDA C; lib is --nvrtc-lib.
func buildCustom(kg *passes.KernelGraph, sm int, lib string) ([]customKernel, error) {
	var out []customKernel
	var c custom.Compiler
	var why error
	opened := false
	for i, k := range kg.Kernels {
		if k.Kind != passes.Custom {
			continue
		}
		ck := customKernel{index: i, k: k}
		for _, v := range k.Body.Values {
			if v.Op == ops.CustomOp {
				ck.op = v
			}
		}
		if ck.op == nil {
			return nil, fmt.Errorf("internal error: custom kernel %s has no custom op", k.Name)
		}
		if ck.op.Attrs.String("lang", "") == "cuda" && !opened {
			opened = true
			if n, err := nvrtc.Open(lib); err != nil {
				why = err
			} else {
				c = n
			}
		}
		src := ck.op
		for _, w := range k.Ops { // the source graph's value, which carries the model's line
			if w.Op == ops.CustomOp {
				src = w
			}
		}
		ck.pos = src.Pos
		u, err := custom.Build(withPos(ck.op, src.Pos), c, why, sm)
		if err != nil {
			return nil, err
		}
		ck.unit = u
		out = append(out, ck)
	}
	return out, nil
}

func withPos(v *ir.Value, pos string) *ir.Value {
	c := *v
	c.Pos = pos
	return &c
}

// customLaunch is the plan's launch of ck, running entry: a pointer per operand, one to the
// result, then the scalars.
func customLaunch(kg *passes.KernelGraph, offsets map[string]int64, ck customKernel, entry string) (artifact.Kernel, error) {
	k, a := ck.k, ck.op.Attrs
	fail := func(format string, args ...any) (artifact.Kernel, error) {
		return artifact.Kernel{}, &custom.Error{Pos: ck.pos, Name: a.String("name", ""), Err: fmt.Errorf(format, args...)}
	}
	pk := artifact.Kernel{Name: k.Name, Entry: entry, Ops: ops.CustomOp + " " + a.String("name", "")}
	copy(pk.Grid[:], a.Ints("grid"))
	copy(pk.Block[:], a.Ints("block"))
	var scratch int64
	for i, arg := range ck.op.Args {
		if arg.Op != ir.OpInput {
			return fail("operand %d is a %s computed inside the kernel; a custom op's operands must be tensors in memory", i, arg.Op)
		}
		b, err := bind(kg, offsets, ptxArg(arg.Name), &scratch)
		if err != nil {
			return artifact.Kernel{}, err
		}
		pk.Args = append(pk.Args, b)
	}
	if len(k.Writes) != 1 {
		names := make([]string, len(k.Writes))
		for i, w := range k.Writes {
			names[i] = w.Name
		}
		return fail("its result is written to %d buffers (%s); output it under one name", len(k.Writes), strings.Join(names, ", "))
	}
	b, err := bind(kg, offsets, ptxArg(k.Writes[0].Name), &scratch)
	if err != nil {
		return artifact.Kernel{}, err
	}
	pk.Args = append(pk.Args, b)
	st, _ := ops.ScalarTypes(a) // the verifier checked them
	for i, v := range a.Floats("scalars") {
		pk.Args = append(pk.Args, artifact.Arg{Kind: artifact.ArgScalar, Type: st[i].String(), Value: v})
	}
	return pk, nil
}

func ptxArg(name string) ptx.Arg { return ptx.Arg{Kind: ptx.ArgInput, Name: name} }
