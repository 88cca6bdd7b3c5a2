package tensor_test

import (
	"math"
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

// RandomInput draws integers from exactly range=[lo,hi): at the dtype's limits, from ranges wider
// than MaxInt64, and never outside.
func TestRandomInputRange(t *testing.T) {
	tests := []struct {
		dt     ir.DType
		lo, hi int
	}{
		{ir.I8, -128, 128}, {ir.I8, -3, -1}, {ir.U8, 250, 256}, {ir.I32, -1 << 31, -1<<31 + 2},
		{ir.I64, -1 << 62, 1 << 62}, {ir.I64, math.MinInt64, math.MaxInt64}, {ir.I64, 7, 8},
	}
	for _, tc := range tests {
		v := ir.NewGraph("g").Input("x", ir.T(tc.dt, 1000), ir.Attrs{"range": []int{tc.lo, tc.hi}})
		x := tensor.RandomInput(v, 1)
		lo, hi := int64(x.I[0]), int64(x.I[0])
		for _, n := range x.I {
			lo, hi = min(lo, n), max(hi, n)
		}
		if lo < int64(tc.lo) || hi >= int64(tc.hi) {
			t.Errorf("%s range=[%d,%d): drew from %d to %d", tc.dt, tc.lo, tc.hi, lo, hi)
		}
		if tc.hi-tc.lo > 1000 && (lo > 0 || hi < 0) && tc.lo < 0 && tc.hi > 0 {
			t.Errorf("%s range=[%d,%d): drew only from %d to %d", tc.dt, tc.lo, tc.hi, lo, hi)
		}
	}
}
