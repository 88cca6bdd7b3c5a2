package ptx

import (
	"regexp"
	"strings"
	"testing"
)

// A symbolic loop kernel takes its element count as a trailing .u32 parameter, bounds both loops
// by it (no element count as an immediate), assembles without spills, and is never shared with
// the static kernel of the same bound types; kernels that are not flat elementwise are refused.
func TestSymbolicLoopKernel(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"f32 vectors", "graph k {\n  input %x : f32[40,3]\n  input %y : f32[40,3]\n  %0 = mul(%x, %y) : f32[40,3]\n  %1 = exp(%0) : f32[40,3]\n  output out = %1\n}\n"},
		{"f16 eight-wide, two outputs", "graph k {\n  input %x : f16[9,16]\n  %0 = tanh(%x) : f16[9,16]\n  %1 = cast(%0) {to=f32} : f32[9,16]\n  output a = %0\n  output b = %1\n}\n"},
		{"scalar bound", "graph k {\n  input %x : i32[3]\n  %0 = neg(%x) : i32[3]\n  output out = %0\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := parse(t, tc.src)
			k := Kernel{Name: "k0", Graph: g, Symbolic: true}
			text, l, err := Generate(k, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			last := l.Params[len(l.Params)-1]
			if last.Kind != ArgSize || l.Work == nil || l.Work.Block != loopBlock {
				t.Fatalf("params %v, work %v", l.Params, l.Work)
			}
			if !strings.Contains(text, "ld.param.u32") || regexp.MustCompile(`setp\.ge\.u32 %p\d+, %r\d+, \d+;`).MatchString(text) {
				t.Errorf("loops not bounded by the size parameter:\n%s", text)
			}
			if got, want := l.Grid[0], l.Work.Grid(int64(g.Outputs[0].Value.Type.Shape.NumElements())); got != want {
				t.Errorf("grid %d, at the bound %d", got, want)
			}
			static, _, err := Generate(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if static == text || ShareKey(k) == ShareKey(Kernel{Name: "k0", Graph: g}) {
				t.Error("the symbolic kernel is the static one")
			}
			assemble(t, "//\n.version 7.0\n.target sm_80\n.address_size 64\n\n"+text)
		})
	}
	for _, tc := range []struct{ src, want string }{
		{"graph k {\n  input %x : f32[3]\n  %0 = broadcast_in_dim(%x) {shape=[4,3], dims=[1]} : f32[4,3]\n  output out = %0\n}\n", "input x is read through a broadcast or view"},
		{"graph k {\n  input %x : f32[4,3]\n  %0 = transpose(%x) {perm=[1,0]} : f32[3,4]\n  %1 = neg(%0) : f32[3,4]\n  output out = %1\n}\n", "input x is read through a broadcast or view"},
	} {
		_, _, err := Generate(Kernel{Name: "k0", Graph: parse(t, tc.src), Symbolic: true}, Target{SM: 80})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate = %v, want %q", err, tc.want)
		}
	}
}
