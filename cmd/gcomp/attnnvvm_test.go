package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
)

// --emit nvvm of a model with attention writes valid LLVM IR: the CUDA-core (f32) and
// tensor-core (f16 prefill, mma.sync as inline assembly) templates are the NVVM producer's own
// (both used to refuse the model).
func TestEmitNVVMAttention(t *testing.T) {
	lib, libErr := libnvvm.Load("") // before leaving the module, where .cache/nvvm may be
	t.Chdir(t.TempDir())
	for _, c := range []struct{ dtype, file, err string }{
		{"f32", "f32.gir", ""},
		{"f16", "f16.gir", ""},
	} {
		gir := `graph m {
  input %q : ` + c.dtype + `[1,2,16,16]
  input %k : ` + c.dtype + `[1,2,20,16]
  input %v : ` + c.dtype + `[1,2,20,16]
  %0 = attention(%q, %k, %v) {mask="causal", scale=0.25} : ` + c.dtype + `[1,2,16,16]
  output o = %0
}
`
		if err := os.WriteFile(c.file, []byte(gir), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := Main([]string{"build", c.file, "--emit", "nvvm", "-o", c.dtype + ".ll"}, &stdout, &stderr)
		if c.err != "" {
			if code != 1 || !bytes.Contains(stderr.Bytes(), []byte(c.err)) {
				t.Errorf("%s: exit %d, stderr %q; want 1 and %q", c.file, code, stderr.String(), c.err)
			}
			if _, err := os.Stat(c.dtype + ".ll"); err == nil {
				t.Errorf("%s: a refused build left %s.ll", c.file, c.dtype)
			}
			continue
		}
		if code != 0 {
			t.Fatalf("build --emit nvvm: exit %d: %s", code, stderr.String())
		}
		ll, err := os.ReadFile(c.dtype + ".ll")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^define void @k0_attention\(`).Match(ll) {
			t.Errorf("%s.ll has no k0_attention:\n%s", c.dtype, ll)
		}
		if mma := bytes.Contains(ll, []byte("mma.sync.aligned.m16n8k16")); mma != (c.dtype == "f16") {
			t.Errorf("%s.ll: mma.sync %v, want it for f16 alone", c.dtype, mma)
		}
		if as, err := exec.LookPath("llvm-as-14"); err == nil {
			if out, err := exec.Command(as, c.dtype+".ll", "-o", os.DevNull).CombinedOutput(); err != nil {
				t.Errorf("llvm-as-14 %s.ll: %v\n%s", c.dtype, err, out)
			}
		}
		if libErr == nil {
			if _, log, err := lib.Compile("m", []libnvvm.Module{{Name: "m", Data: ll}}, "-arch=compute_80"); err != nil {
				t.Fatalf("libNVVM: %v\n%s", err, log)
			}
		}
	}
}
