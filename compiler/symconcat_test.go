package compiler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// A concat along a symbolic dim (a cache grown by one step's row) runs as codegen/ptx's concat
// copy: built once, run on the memchecked simulator at past 0, 1, 13, 31 and the bound 37
// against the reference, in f32 and f16, at each axis of [2, 3, 5, 4], with the symbolic
// operand first or last, three operands, two symbolic ones, and an operand read through a
// transpose.
func TestSymbolicConcat(t *testing.T) {
	dims := []string{"2", "3", "5", "4"}
	at := func(axis int, s string) string {
		d := append([]string(nil), dims...)
		d[axis] = s
		return strings.Join(d, ",")
	}
	for _, dt := range []ir.DType{ir.F32, ir.F16} {
		for axis := range 4 {
			for _, tc := range []struct {
				name     string
				operands []string // the sizes along the axis
				out      string
			}{
				{"past_first", []string{"past", "1"}, "past+1"},
				{"past_last", []string{"1", "past"}, "past+1"},
				{"three", []string{"2", "past", "3"}, "past+5"},
				{"two_symbolic", []string{"past", "past"}, "2*past"},
			} {
				t.Run(fmt.Sprintf("%s_axis%d_%s", dt, axis, tc.name), func(t *testing.T) {
					var src strings.Builder
					fmt.Fprintf(&src, "graph s {\n  dims { past in [0,37] }\n")
					var names []string
					for i, n := range tc.operands {
						fmt.Fprintf(&src, "  input %%x%d : %s[%s]\n", i, dt, at(axis, n))
						names = append(names, fmt.Sprintf("%%x%d", i))
					}
					fmt.Fprintf(&src, "  %%0 = concat(%s) {axis=%d} : %s[%s]\n  output y = %%0\n}\n", strings.Join(names, ", "), axis, dt, at(axis, tc.out))
					g, err := ir.Parse("s.gir", []byte(src.String()))
					if err != nil {
						t.Fatalf("%v\n%s", err, src.String())
					}
					checkRows(t, g)
				})
			}
		}
	}
}

// A decoder's step exported with past_key_values: the keys [b, 4, past, 16] grown by the
// step's row, which arrives [b, 1, 4, 16] and is transposed to [b, 4, 1, 16].
func TestSymbolicConcatTransposed(t *testing.T) {
	g, err := frontend.Build("grow", func(b *frontend.Builder) {
		past := b.Dim("past", 1, 29)
		pk := b.Input("past_k", ir.F32, 2, 4, past, 16)
		k := b.Input("k", ir.F32, 2, 1, 4, 16)
		b.Output("present_k", frontend.Cat(2, pk, k.Transpose(1, 2)))
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ptxText := string(res.Artifact.PTX); !strings.Contains(ptxText, "operand 1 of the concat") {
		t.Fatal("the concat is not codegen/ptx's concat copy")
	}
	checkRows(t, g)
}

// With --backend nvvm the concat along a symbolic dim is codegen/nvvm's own entry (its
// symconcat.go), and the build runs as the ptx build does, bit for bit.
func TestSymbolicConcatNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	g, err := frontend.Build("grow", func(b *frontend.Builder) {
		past := b.Dim("past", 0, 23)
		pk := b.Input("past_k", ir.F16, 2, 4, past, 8)
		k := b.Input("k", ir.F16, 2, 4, 1, 8)
		b.Output("present_k", frontend.Cat(2, pk, k))
	})
	if err != nil {
		t.Fatal(err)
	}
	checkConcatNVVM(t, g, lib.Path)
}

// checkConcatNVVM builds g, one concat kernel, with --backend nvvm: the kernel is codegen/nvvm's
// own entry, not codegen/ptx's; the build runs as the ptx build does.
func checkConcatNVVM(t *testing.T, g *ir.Graph, lib string) {
	t.Helper()
	nv, err := backend.New("nvvm", lib)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Producer: nv})
	if err != nil {
		t.Fatal(err)
	}
	ks := res.Artifact.Plan.Kernels
	if len(ks) != 1 || ks[0].Producer == "ptx" {
		t.Fatalf("kernels %+v, want one concat entry of codegen/nvvm's", ks)
	}
	checkNVVM(t, g, lib)
}

// grownStep is cachedStep's decoding step over a cache grown inside the graph, as a decoder
// exported with past_key_values grows it: present = concat(past, the step's row) along the
// cache length past+1, past in [lo, maxPast]; the attention reads the grown caches, which are
// outputs too.
func grownStep(dt ir.DType, lo, maxPast int) func(b *frontend.Builder) {
	return func(b *frontend.Builder) { b.Output("o", grownAttention(b, dt, lo, maxPast)) }
}

// grownAttention builds grownStep's caches (outputs present_k and present_v) and returns the
// attention over them.
func grownAttention(b *frontend.Builder, dt ir.DType, lo, maxPast int) *frontend.Tensor {
	past := b.Dim("past", lo, maxPast)
	q := b.Input("q", dt, 2, 4, 1, 16)
	pk, pv := b.Input("past_k", dt, 2, 4, past, 16), b.Input("past_v", dt, 2, 4, past, 16)
	k, v := b.Input("k", dt, 2, 4, 1, 16), b.Input("v", dt, 2, 4, 1, 16)
	presentK, presentV := frontend.Cat(2, pk, k), frontend.Cat(2, pv, v)
	b.Output("present_k", presentK)
	b.Output("present_v", presentV)
	return frontend.ScaledDotProductAttention(q, presentK, presentV, false)
}

// The split-KV decode over a symbolic cache length reads a cache grown by concat: built once,
// run at past 0 (or 1), a prime and the bound against the reference.
func TestSymbolicConcatDecode(t *testing.T) {
	for _, tc := range []struct {
		dt ir.DType
		lo int
	}{{ir.F32, 0}, {ir.F16, 1}} {
		t.Run(fmt.Sprint(tc.dt), func(t *testing.T) {
			g, err := frontend.Build("decode", grownStep(tc.dt, tc.lo, 199))
			if err != nil {
				t.Fatal(err)
			}
			res, _ := compileAttention(t, g)
			if text := string(res.Artifact.PTX); !strings.Contains(text, "split-KV attention, over cache length") || !strings.Contains(text, "operand 1 of the concat") {
				t.Fatal("the step is not a concat copy and the split-KV attention over the cache length")
			}
			checkRowsAt(t, g, compiler.Options{}, []map[string]int64{{"past": int64(tc.lo)}, {"past": 61}, {"past": 199}}, 64, nil)
		})
	}
}

// The attention's rows over a symbolic cache length are static ([2, 4, 1, 16]), so the linear
// layer reading them is a static kernel (it was handed symbolic sizes of constants, which the
// GEMM templates refused): the step with its heads merged into an output projection, as a
// decoder has it, runs at past 0, 1, 13, 31 and the bound.
func TestSymbolicConcatDecodeProjected(t *testing.T) {
	g, err := frontend.Build("decode", func(b *frontend.Builder) {
		o := grownAttention(b, ir.F32, 0, 37)
		proj := nn.NewLinear(b, "proj", 64, 16).Forward(o.Transpose(1, 2).Reshape(2, 1, 64))
		b.Output("y", proj)
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, g)
}
