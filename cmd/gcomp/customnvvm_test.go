package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/ops"
)

// scalePTX is a custom kernel in PTX, y[i] = 2 x[i] for i < 4, with a quote to escape.
const scalePTX = `.version 7.0
.target sm_80
.address_size 64

// the "scale" kernel
.visible .entry scale(.param .u64 x, .param .u64 y)
{
	.reg .pred %p;
	.reg .b32 %r<2>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [y];
	mov.u32 %r1, %tid.x;
	setp.ge.u32 %p, %r1, 4;
	@%p bra DONE;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd1, %rd3;
	add.s64 %rd5, %rd2, %rd3;
	ld.global.f32 %f1, [%rd4];
	add.f32 %f2, %f1, %f1;
	st.global.f32 [%rd5], %f2;
DONE:
	ret;
}
`

// --emit nvvm of a model with a custom kernel writes valid LLVM IR: the kernel's PTX joins the
// module as module-level inline assembly, which llvm-as reads and libNVVM compiles along.
func TestEmitNVVMCustom(t *testing.T) {
	lib, libErr := libnvvm.Load("") // before leaving the module, where .cache/nvvm may be
	t.Chdir(t.TempDir())
	gir := fmt.Sprintf(`graph m {
  input %%x : f32[4]
  %%0 = exp(%%x) : f32[4]
  %%1 = custom(%%0) {block=[4,1,1], dtype=f32, entry="scale", file="scale.ptx", grid=[1,1,1], hash=%q, lang="ptx", name="scale", shape=[4], source=%q} : f32[4]
  output y = %%1
}
`, ops.SourceHash(scalePTX), scalePTX)
	if err := os.WriteFile("m.gir", []byte(gir), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "m.gir", "--emit", "nvvm", "-o", "m.ll"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build --emit nvvm: exit %d: %s", code, stderr.String())
	}
	ll, err := os.ReadFile("m.ll")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`(?m)^define void @k0_exp\(`, `(?m)^; custom op scale \(scale\.ptx\): its PTX \(ISA 7\.0\)`,
		`(?m)^module asm "\.visible \.entry scale\(\.param \.u64 x, \.param \.u64 y\)"$`, `(?m)^module asm "// the \\22scale\\22 kernel"$`,
		`(?m)^module asm "\tst\.global\.f32 \[%rd5\], %f2;"$`} {
		if !regexp.MustCompile(want).MatchString(string(ll)) {
			t.Errorf("m.ll lacks %s", want)
		}
	}
	if bad := regexp.MustCompile(`(?m)^(\.|//|\s+ld\.)`).FindString(string(ll)); bad != "" {
		t.Errorf("m.ll has PTX outside module asm: %q", bad)
	}
	if as, err := exec.LookPath("llvm-as-14"); err == nil {
		if out, err := exec.Command(as, "m.ll", "-o", os.DevNull).CombinedOutput(); err != nil {
			t.Errorf("llvm-as-14 m.ll: %v\n%s", err, out)
		}
	}
	if libErr == nil {
		ptx, log, err := lib.Compile("m", []libnvvm.Module{{Name: "m", Data: ll}}, "-arch=compute_80")
		if err != nil {
			t.Fatalf("libNVVM: %v\n%s", err, log)
		}
		t.Logf("libNVVM %s compiled m.ll", lib.Path)
		for _, want := range []string{".entry k0_exp(", ".visible .entry scale(.param .u64 x, .param .u64 y)"} {
			if !strings.Contains(string(ptx), want) {
				t.Errorf("libNVVM's PTX lacks %q", want)
			}
		}
	}
}
