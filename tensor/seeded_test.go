package tensor_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// SeededValues gives each input RandomInput's data and each parameter its initializer's, from one
// seed; a parameter with an unknown initializer is an error.
func TestSeededValues(t *testing.T) {
	g, err := ir.Parse("g.gir", []byte("graph g {\n  input %x : f32[2,3]\n  input %t : i64[4] {range=[0,5]}\n  param %w : f32[3] {init=\"normal\"}\n  %0 = add(%x, %x) : f32[2,3]\n  output y = %0\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	in, params, err := tensor.SeededValues(g, 7)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tensor.Initialize(g.Lookup("w"), 7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in["x"].F, tensor.RandomInput(g.Lookup("x"), 7).F) || !slices.Equal(in["t"].I, tensor.RandomInput(g.Lookup("t"), 7).I) ||
		!slices.Equal(params["w"].F, w.F) || len(in) != 2 || len(params) != 1 {
		t.Errorf("SeededValues = %v, %v", in, params)
	}
	g.Lookup("w").Attrs["init"] = "frob"
	if _, _, err := tensor.SeededValues(g, 7); err == nil || !strings.Contains(err.Error(), `unknown initializer "frob"`) {
		t.Errorf("unknown initializer: %v", err)
	}
}

// ReadNPYFile reads what Array writes; a file with a dtype gcomp lacks names the file.
func TestReadNPYFile(t *testing.T) {
	dir := t.TempDir()
	x := tensor.FromFloats(ir.T(ir.F32, 2), []float64{1.5, -2})
	path := filepath.Join(dir, "x.npy")
	if err := tensorio.WriteNPYFile(path, x.Array()); err != nil {
		t.Fatal(err)
	}
	got, err := tensor.ReadNPYFile(path)
	if err != nil || !got.Type.Equal(x.Type) || !slices.Equal(got.F, x.F) {
		t.Fatalf("ReadNPYFile = %v, %v", got, err)
	}
	u32 := filepath.Join(dir, "u.npy")
	if err := tensorio.WriteNPYFile(u32, &tensorio.Array{DType: "u32", Shape: []int{1}, Data: make([]byte, 4)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tensor.ReadNPYFile(u32); err == nil || !strings.HasPrefix(err.Error(), u32+": ") {
		t.Errorf("u32 file: %v", err)
	}
}
