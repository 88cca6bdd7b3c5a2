package compiler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// Dropout's mask over symbolic dims: philox_uniform typed over them is a function of each
// element's row-major index at the run's sizes (ops' reference at those sizes). A row kernel
// decodes row r with the bound's sizes and encodes it back to r, so element j of row r draws
// at index r·inner+j, the run's row-major index, over any rows: one leading symbolic dim, two
// ([batch, seq, d], a transformer's activations), a static dim before a symbolic one, or rows
// that are the whole shape. One build runs at 1, primes and the bounds (memchecked) equal to
// the reference interpreter at those sizes and, bit for bit, to the static build's, with the
// masked input in each float dtype dropout takes; a seq of 0 draws nothing.
func TestSymbolicDropoutMask(t *testing.T) {
	for _, tc := range []struct {
		name, dims, sym string
		bound           []int
		stream          int
	}{
		{"a symbolic batch", "batch in [1,40]", "batch,3,5", []int{40, 3, 5}, 2},
		{"batch and seq", "batch in [1,4], seq in [1,16]", "batch,seq,6", []int{4, 16, 6}, 1},
		{"batch and seq from 0, odd rows", "batch in [1,3], seq in [0,31]", "batch,seq,3", []int{3, 31, 3}, 0},
		{"a static dim before the batch", "batch in [1,13]", "2,batch,3", []int{2, 13, 3}, 5},
		{"the rows are the shape", "batch in [1,5], seq in [1,13]", "batch,2,seq", []int{5, 2, 13}, 3},
	} {
		for _, dt := range []string{"f32", "f16", "bf16"} {
			t.Run(tc.name+"/"+dt, func(t *testing.T) {
				g, err := ir.Parse("s.gir", []byte(dropoutGraph(tc.dims, tc.sym, tc.bound, tc.stream, dt)))
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, g)
				checkStaticBits(t, g)
			})
		}
	}
}

// The same masks from codegen/nvvm: equal to the reference and, bit for bit, to codegen/ptx's
// build at every run's sizes (checkNVVM).
func TestSymbolicDropoutMaskNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	for _, tc := range []struct {
		name, dims, sym string
		bound           []int
	}{
		{"batch and seq", "batch in [1,4], seq in [1,9]", "batch,seq,6", []int{4, 9, 6}},
		{"a static dim before the batch", "batch in [1,8]", "2,batch,3", []int{2, 8, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte(dropoutGraph(tc.dims, tc.sym, tc.bound, 1, "bf16")))
			if err != nil {
				t.Fatal(err)
			}
			checkNVVM(t, g, lib.Path)
		})
	}
}

// A mask drawn over other rows than the kernel's is refused naming the value and why: one
// broadcast along a symbolic dim (its index is not the result's), one moved by a transpose.
func TestSymbolicDropoutMaskRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"a mask broadcast along seq", "  %0 = philox_uniform(%key) {shape=[4,1,2]} : f32[b,1,2]\n" +
			"  %1 = broadcast_in_dim(%0) {shape=[4,9,2], dims=[0,1,2]} : f32[b,t,2]\n  %2 = mul(%x, %1) : f32[b,t,2]\n  output y = %2\n",
			"f32[b,1,2] has b rows, %0 = broadcast_in_dim(%t2) {dims=[0,1,2], shape=[4,9,2]} : f32[b,t,2] has b*t"},
		{"a mask moved by a transpose", "  %0 = philox_uniform(%key) {shape=[9,4,2]} : f32[t,b,2]\n" +
			"  %1 = transpose(%0) {perm=[1,0,2]} : f32[b,t,2]\n  %2 = mul(%x, %1) : f32[b,t,2]\n  output y = %2\n",
			"moves a symbolic dim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, "graph s {\n  dims { b in [1,4], t in [1,9] }\n  input %key : i64[]\n  input %x : f32[b,t,2]\n"+tc.body+"}\n", tc.want)
		})
	}
}

// The mask's kernel over [batch, seq, 64] does the run's work, not the bound's: at each run's
// sizes it stores the bytes the static build at those sizes stores, and its thread instructions
// are within a quarter of the static build's (the size checks; logged for docs/perf.md).
func TestSymbolicDropoutMaskWork(t *testing.T) {
	g, err := ir.Parse("s.gir", []byte(dropoutGraph("batch in [1,8], seq in [1,128]", "batch,seq,64", []int{8, 128, 64}, 0, "f32")))
	if err != nil {
		t.Fatal(err)
	}
	p := load(t, g)
	for _, env := range []map[string]int64{{"batch": 1, "seq": 1}, {"batch": 3, "seq": 37}, {"batch": 8, "seq": 128}} {
		st, err := ops.Instantiate(g, env)
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatal(err)
		}
		static, err := load(t, st).Run(inputs)
		if err != nil {
			t.Fatal(err)
		}
		var sym, stat executor.Counters
		for _, k := range got.Kernels {
			sym.Add(k.Counters)
		}
		for _, k := range static.Kernels {
			stat.Add(k.Counters)
		}
		if sym.GlobalStoreBytes != stat.GlobalStoreBytes || sym.ThreadInsts > stat.ThreadInsts*5/4 {
			t.Errorf("sizes %v: the symbolic build stores %d bytes in %d thread instructions, the static build %d in %d",
				env, sym.GlobalStoreBytes, sym.ThreadInsts, stat.GlobalStoreBytes, stat.ThreadInsts)
		}
		t.Logf("sizes %v: %d kernels, %d thread instructions, %d bytes stored; static build: %d kernels, %d, %d",
			env, len(got.Kernels), sym.ThreadInsts, sym.GlobalStoreBytes, len(static.Kernels), stat.ThreadInsts, stat.GlobalStoreBytes)
	}
}

// dropoutGraph is DropoutTrain's graph with p = 0.5 over an input x : dt[sym] whose bound is
// bound, with the mask u as a second output.
func dropoutGraph(dims, sym string, bound []int, stream int, dt string) string {
	shape := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(bound)), ","), "[]")
	return fmt.Sprintf("graph s {\n  dims { %[1]s }\n  input %%key : i64[]\n  input %%x : %[5]s[%[2]s]\n"+
		"  %%0 = philox_uniform(%%key) {shape=[%[3]s], stream=%[4]d} : f32[%[2]s]\n"+
		"  %%c = constant() {dtype=f32, shape=[], value=[0.5]} : f32[]\n  %%1 = broadcast_in_dim(%%c) {shape=[%[3]s], dims=[]} : f32[%[2]s]\n"+
		"  %%2 = lt(%%0, %%1) : bool[%[2]s]\n  %%s = constant() {dtype=%[5]s, shape=[], value=[2]} : %[5]s[]\n"+
		"  %%3 = broadcast_in_dim(%%s) {shape=[%[3]s], dims=[]} : %[5]s[%[2]s]\n  %%4 = mul(%%x, %%3) : %[5]s[%[2]s]\n"+
		"  %%z = constant() {dtype=%[5]s, shape=[], value=[0]} : %[5]s[]\n"+
		"  %%5 = broadcast_in_dim(%%z) {shape=[%[3]s], dims=[]} : %[5]s[%[2]s]\n  %%6 = select(%%2, %%4, %%5) : %[5]s[%[2]s]\n"+
		"  output y = %%6\n  output u = %%0\n}\n", dims, sym, shape, stream, dt)
}
