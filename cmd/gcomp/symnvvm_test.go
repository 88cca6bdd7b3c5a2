package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// gcomp build --backend nvvm builds a model with dims once (a GEMM and a softmax over its rows,
// each a kernel from libNVVM with a size parameter), and gcomp run and check run it at two
// sizes; a graph whose product's rows are not independent (the outer product of the symbolic
// rows) is refused as with codegen/ptx, exit status 1 and nothing written.
func TestBuildRunSymbolicNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	dev, err := lib.Libdevice()
	if err != nil {
		t.Skipf("SKIPPING: %v", err)
	}
	t.Setenv(libnvvm.LibdeviceEnv, dev)
	t.Chdir(t.TempDir())
	gir := "graph s {\n  dims { batch in [1,40] }\n  input %x : f32[batch,24]\n" +
		"  param %w : f32[32,24] {high=1.0, init=\"uniform\", low=-1.0}\n" +
		"  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[batch,32]\n" +
		"  %1 = reduce_max(%0) {axes=[1]} : f32[batch]\n  %2 = broadcast_in_dim(%1) {shape=[40,32], dims=[0]} : f32[batch,32]\n" +
		"  %3 = sub(%0, %2) : f32[batch,32]\n  %4 = exp(%3) : f32[batch,32]\n  %5 = reduce_sum(%4) {axes=[1]} : f32[batch]\n" +
		"  %6 = broadcast_in_dim(%5) {shape=[40,32], dims=[0]} : f32[batch,32]\n  %7 = div(%4, %6) : f32[batch,32]\n  output y = %7\n}\n"
	red := "graph r {\n  dims { batch in [1,40] }\n  input %x : f32[batch,3]\n" +
		"  %0 = dot_general(%x, %x) {lhs_contract=[1], rhs_contract=[1]} : f32[batch,batch]\n  output y = %0\n}\n"
	for name, text := range map[string]string{"s.gir": gir, "r.gir": red} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "s.gir", "--backend", "nvvm", "--nvvm-lib", lib.Path, "-o", "s.ptx"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build failed: %s", stderr.String())
	}
	text, err := os.ReadFile("s.ptx")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "NVVM") || strings.Count(string(text), ".param .u32") < 2 {
		t.Fatalf("not libNVVM's symbolic kernels:\n%s", text)
	}
	for _, n := range []int{23, 1} {
		vals := make([]float64, 24*n)
		for i := range vals {
			vals[i] = float64(i%13)/8 - 0.7
		}
		x := fmt.Sprintf("x%d.npy", n)
		if err := tensorio.WriteNPYFile(x, tensor.FromFloats(ir.T(ir.F32, n, 24), vals).Array()); err != nil {
			t.Fatal(err)
		}
		if code := Main([]string{"run", "s.ptx", "--device", "sim", "--input", "x=" + x, "--output-dir", "o" + x}, &stdout, &stderr); code != 0 {
			t.Fatalf("run at %d: %s", n, stderr.String())
		}
		if got := readNPY(t, "o"+x+"/y.npy"); !got.Type.Equal(ir.T(ir.F32, n, 32)) {
			t.Fatalf("batch %d: y is %s", n, got.Type)
		}
		stdout.Reset()
		if code := Main([]string{"check", "s.ptx", "--input", "x=" + x}, &stdout, &stderr); code != 0 || !regexp.MustCompile(fmt.Sprintf(`y +f32\[%d,32\] .* ok\n`, n)).MatchString(stdout.String()) {
			t.Fatalf("check at %d: exit %d\n%s%s", n, code, stdout.String(), stderr.String())
		}
	}
	stderr.Reset()
	code := Main([]string{"build", "r.gir", "--backend", "nvvm", "--nvvm-lib", lib.Path, "-o", "r.ptx"}, &stdout, &stderr)
	// The outer product of the symbolic rows has rows that are not independent.
	want := "contraction kernel k0_matmul (dot_general), over symbolic buffer y: input %x : f32[batch,3] has batch rows, %0 = dot_general(%x, %x) {lhs_contract=[1], rhs_contract=[1]} : f32[batch,batch] has batch*batch"
	if code != 1 || !strings.Contains(stderr.String(), want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
		t.Errorf("build r.gir --backend nvvm: exit %d, stderr %q; want %q", code, stderr.String(), want)
	}
	if _, err := os.Stat("r.ptx"); err == nil {
		t.Error("a refused build wrote r.ptx")
	}
}
