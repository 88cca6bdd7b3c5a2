package autodiff

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

func TestCustomNoGradient(t *testing.T) {
	src := "extern \"C\" __global__ void k(const float* x, float* y) {}"
	typ := ir.Type{DType: ir.F32, Shape: ir.Shape{4}}
	g := ir.NewGraph("m")
	w := g.Param("w", typ, ir.Attrs{"init": "zeros"})
	c := g.Add(ops.CustomOp, typ, ir.Attrs{"name": "swish", "entry": "k", "lang": "cuda", "file": "k.cu", "source": src,
		"hash": ops.SourceHash(src), "dtype": ir.F32, "shape": []int{4}, "grid": []int{1, 1, 1}, "block": []int{4, 1, 1}}, w)
	c.Pos = "model.go:7"
	s := g.Add("reduce_sum", ir.Type{DType: ir.F32, Shape: ir.Shape{}}, ir.Attrs{"axes": []int{0}}, c)
	g.SetOutput("loss", s)
	if err := ops.Verify(g); err != nil {
		t.Fatal(err)
	}
	_, err := Grad(g, "loss", []string{"w"})
	want := `model.go:7: custom op "swish" has no gradient`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
