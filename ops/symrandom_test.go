package ops

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Random graphs over symbolic dims: whatever InferSym accepts verifies, and instantiating the
// graph at random sizes in the ranges gives a static graph that verifies, that is, each rule's
// expressions evaluate to exactly what the static inference computes at those sizes.
func TestSymbolicRandomGraphs(t *testing.T) {
	accepted := map[string]int{}
	for seed := int64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		g := ir.NewGraph("r")
		a, b, c := g.DeclareDim("a", 1, 5), g.DeclareDim("b", 0, 6), g.DeclareDim("c", 4, 9)
		r := g.Ranges()
		in := func(name string, dims ...sym.Expr) {
			ty, err := ir.SymType(ir.F32, r, dims...)
			if err != nil {
				t.Fatal(err)
			}
			g.Input(name, ty, nil)
		}
		k := func(n int64) sym.Expr { return sym.Const(n) }
		in("x1", a, b, k(3))
		in("x2", sym.Add(b, k(1)), k(3))
		in("x3", a, k(2), c, sym.Mul(k(2), c))
		in("x4", k(3))
		for step := 0; step < 40; step++ {
			v := g.Values[rng.Intn(len(g.Values))]
			op, attrs, args, want := randomSymOp(rng, g, v)
			if op == "" {
				continue
			}
			types := make([]ir.Type, len(args))
			for i, x := range args {
				types[i] = x.Type
			}
			ty, err := InferSym(op, types, attrs, r, want)
			if err != nil || ty.Shape.NumElements() > 1<<16 {
				continue
			}
			if slices.ContainsFunc(types, func(t ir.Type) bool { return t.Sym != nil }) {
				accepted[op]++ // with a symbolic operand: the rule ran
			}
			g.Add(op, ty, attrs, args...)
		}
		for i, v := range g.Values[len(g.Values)-3:] {
			g.SetOutput("y"+string(rune('0'+i)), v)
		}
		if err := Verify(g); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, g)
		}
		for range 6 {
			env := map[string]int64{}
			for _, d := range g.Dims {
				env[d.Name] = int64(d.Lo + rng.Intn(d.Hi-d.Lo+1))
			}
			if _, err := Instantiate(g, env); err != nil {
				t.Fatalf("seed %d at %v: %v\n%s", seed, env, err, g)
			}
		}
	}
	t.Logf("accepted: %v", accepted)
	for _, op := range []string{"neg", "add", "reduce_sum", "transpose", "reshape", "concat", "pad", "slice", "broadcast_in_dim", "dot_general", "conv2d", "max_pool2d"} {
		if accepted[op] == 0 {
			t.Errorf("no random graph has a %s of a symbolic operand: %v", op, accepted)
		}
	}
}

// randomSymOp picks an op applicable to v (or v and a value of its type) with random attributes.
func randomSymOp(rng *rand.Rand, g *ir.Graph, v *ir.Value) (string, ir.Attrs, []*ir.Value, []sym.Expr) {
	ty := v.Type
	rank := len(ty.Shape)
	perm := rng.Perm(rank)
	switch rng.Intn(12) {
	case 0:
		return "neg", nil, []*ir.Value{v}, nil
	case 1:
		for _, u := range g.Values {
			if u != v && u.Type.Equal(ty) {
				return "add", nil, []*ir.Value{v, u}, nil
			}
		}
		return "add", nil, []*ir.Value{v, v}, nil
	case 2:
		var axes []int
		for i := range rank {
			if rng.Intn(2) == 0 {
				axes = append(axes, i)
			}
		}
		return "reduce_sum", ir.Attrs{"axes": axes, "keepdims": rng.Intn(2) == 0}, []*ir.Value{v}, nil
	case 3:
		return "transpose", ir.Attrs{"perm": perm}, []*ir.Value{v}, nil
	case 4: // merge two adjacent dims
		if rank < 2 {
			return "", nil, nil, nil
		}
		i := rng.Intn(rank - 1)
		shape := slices.Clone([]int(ty.Shape))
		shape[i] *= shape[i+1]
		shape = slices.Delete(shape, i+1, i+2)
		return "reshape", ir.Attrs{"shape": shape}, []*ir.Value{v}, nil
	case 5:
		if rank == 0 {
			return "", nil, nil, nil
		}
		return "concat", ir.Attrs{"axis": rng.Intn(rank)}, []*ir.Value{v, v}, nil
	case 6:
		low, high := make([]int, rank), make([]int, rank)
		for i := range low {
			low[i], high[i] = rng.Intn(3), rng.Intn(3)
		}
		return "pad", ir.Attrs{"low": low, "high": high, "value": 1.5}, []*ir.Value{v}, nil
	case 7:
		start, limit, stride := make([]int, rank), make([]int, rank), make([]int, rank)
		for i, n := range ty.Shape {
			limit[i], stride[i] = n, 1
			if _, ok := ty.Axis(i).IsConst(); ok && n > 0 {
				start[i] = rng.Intn(n)
				limit[i] = start[i] + rng.Intn(n-start[i]+1)
				stride[i] = 1 + rng.Intn(2)
			}
		}
		return "slice", ir.Attrs{"start": start, "limit": limit, "stride": stride}, []*ir.Value{v}, nil
	case 8: // a new leading dim
		dims := make([]int, rank)
		for i := range dims {
			dims[i] = i + 1
		}
		return "broadcast_in_dim", ir.Attrs{"shape": append([]int{2}, ty.Shape...), "dims": dims},
			[]*ir.Value{v}, append([]sym.Expr{sym.Const(2)}, ty.Axes()...)
	case 9: // v times itself, contracting the last dims
		if rank == 0 || rank > 2 {
			return "", nil, nil, nil
		}
		return "dot_general", ir.Attrs{"lhs_contract": []int{rank - 1}, "rhs_contract": []int{rank - 1}}, []*ir.Value{v, v}, nil
	case 10:
		if rank != 4 {
			return "", nil, nil, nil
		}
		ch, ok := ty.Axis(1).IsConst()
		if !ok {
			return "", nil, nil, nil
		}
		w := g.Param(fmt.Sprintf("w%d", len(g.Values)), ir.T(ir.F32, 2, int(ch), 3, 3), ir.Attrs{"init": "zeros"})
		return "conv2d", ir.Attrs{"padding": []int{rng.Intn(2), 1}, "stride": []int{1 + rng.Intn(2), 1}}, []*ir.Value{v, w}, nil
	default:
		if rank != 4 {
			return "", nil, nil, nil
		}
		return "max_pool2d", ir.Attrs{"kernel": []int{2, 2}}, []*ir.Value{v}, nil
	}
}
