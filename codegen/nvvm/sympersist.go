package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Persistent kernels at symbolic sizes, as codegen/ptx's sympersist.go. A symbolic stage
// (Kernel.Symbolic, its Rows at the bound) runs the bound's code over its first elements only:
// its element count at the run's sizes is an i32 parameter of the persistent kernel (one per
// symbolic stage, after the buffers, plan.ArgSize with the stage's Index and its units per row
// as Scale), which ends the stage's loop, bounds a contraction's warp groups and its stores.
// The first rows of a value laid out at the bound are where they are at the run's sizes, in
// global and shared memory alike, so a stage reads only rows its predecessors wrote. The launch
// is still one block. While a stage is built, kgen.size is its parameter (nil for a static
// stage), so the stage templates take their ends from kgen.units.

// persistentArgs is a persistent kernel's parameters: plan.Params, then, stage by stage, the
// offsets of its layers (symlayer.go) and the size of a symbolic stage.
func persistentArgs(k plan.Kernel) ([]plan.Arg, error) {
	args := plan.Params(k.Graph)
	for si, st := range k.Stages {
		if st.Sizes != nil {
			rec := &layers{}
			sg := st.Graph.Clone()
			layerViews(st, sg, map[*irg.Value]value.Value{}, rec)
			outs, _, err := stageOutputs(k, st, sg.Outputs)
			if err != nil {
				return nil, err
			}
			sg.Outputs = outs
			layerOutputs(st, sg, make([]value.Value, len(outs)), rec)
			args = append(args, rec.args...)
		}
		if !st.Symbolic {
			continue
		}
		scale, err := symScale(st.Rows, stageUnits(st), "stage "+st.Name+" element count")
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name, err)
		}
		args = append(args, plan.Arg{Kind: plan.ArgSize, Index: si, Scale: scale})
	}
	return args, nil
}

// stageUnits is a stage's units at the bound: its contraction's result elements (a folding
// conv's taps: symconv.go), else its first output's elements.
func stageUnits(st plan.Kernel) int {
	g := st.Graph
	for _, v := range plan.Live(g) {
		if v.Op == "conv2d" && plan.ConvFolds(st, v) {
			return convTaps(v)
		}
		if ops.ClassOf(v.Op) == ops.Contraction {
			return v.Type.Shape.NumElements()
		}
	}
	return g.Outputs[0].Value.Type.Shape.NumElements()
}

// stageSizes maps each symbolic stage's index to its size parameter.
func (kg *kgen) stageSizes(args []plan.Arg) map[int]value.Value {
	sizes := map[int]value.Value{}
	for i, a := range args {
		if a.Kind == plan.ArgSize && a.Expr == "" { // not a layer's offset (symlayer.go)
			sizes[a.Index] = kg.f.Params[i]
		}
	}
	return sizes
}

// symLoopElements is loopElements up to the size parameter: groups of v elements from start
// while a whole group fits (size/v of them), then the scalar tail from v·(size/v) to the size
// (a row stage's groups stay within rows, so its tail runs no iterations).
func (kg *kgen) symLoopElements(shape irg.Shape, start, step value.Value, v int, flat bool) error {
	n := kg.size
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	tail := start
	if v > 1 {
		groups := kg.b.NewUDiv(n, ci(v))
		kg.loopTo(start, step, groups, func(i value.Value) { keep(kg.elementGroup(shape, kg.mul(i, v), v, flat)) })
		tail = kg.add(kg.b.NewMul(groups, ci(v)), start)
	}
	kg.loopTo(tail, step, n, func(i value.Value) { keep(kg.elementGroup(shape, i, 1, true)) })
	return err
}

// warpGroups is the number of warp groups of r elements over a stage's elements (n at the
// bound, the size parameter at symbolic sizes).
func (kg *kgen) warpGroups(n, r int) value.Value {
	if kg.size == nil {
		return ci((n + r - 1) / r)
	}
	return kg.b.NewUDiv(kg.add(kg.size, ci(r-1)), ci(r))
}

// clampLast clamps element index x to the stage's last element: n−1 at the bound, the size
// parameter less one at symbolic sizes (used inside the group loop only, where it is at least 1).
func (kg *kgen) clampLast(x value.Value, n int) value.Value {
	if kg.size == nil {
		return kg.clamp(x, n)
	}
	last := kg.sub(kg.size, ci(1))
	return kg.b.NewSelect(kg.b.NewICmp(enum.IPredUGT, x, last), last, x)
}
