package plan

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// attnKernel parses a kernel graph over q [1,2,32,8] and k, v [1,2,5,8] (and caches of 40 rows)
// whose values and outputs are body.
func attnKernel(t *testing.T, body string) *ir.Graph {
	t.Helper()
	g, err := ir.Parse("k.gir", []byte(`graph g {
  input %q : f32[1,2,32,8]
  input %k : f32[1,2,5,8]
  input %v : f32[1,2,5,8]
  input %knew : f32[1,2,1,8]
  input %kc : f32[1,2,40,8]
  input %pos : i64[1]
  input %q1 : f32[1,2,1,8]
`+body+`}`))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAttentionOutputs: the outputs an attention kernel may write, as both producers check them
// (ForwardLSE, AttentionAppendedCaches), and EmptyOutputs.
func TestAttentionOutputs(t *testing.T) {
	const att = "  %a = attention(%q, %k, %v) {mask=\"none\", scale=0.5} : f32[1,2,32,8]\n"
	const lse = "  %l = attention_lse(%q, %k, %v) {mask=\"none\", scale=0.5} : f32[1,2,32]\n"
	const app = "  %u = update_slice(%kc, %knew, %pos) {axis=2} : f32[1,2,40,8]\n" +
		"  %d = attention(%q1, %u, %kc, %pos) {mask=\"position\", scale=0.5} : f32[1,2,1,8]\n"
	for _, c := range []struct {
		name, body string
		inPlace    bool
		lse        bool   // ForwardLSE finds the LSE output
		err        string // ForwardLSE's or AttentionAppendedCaches' error, "" for none
	}{
		{"result alone", att + "  output o = %a\n", false, false, ""},
		{"result and lse", att + lse + "  output o = %a\n  output lse = %l\n", false, true, ""},
		{"lse alone", att + lse + "  output lse = %l\n", false, false, "writes the attention op's result"},
		{"another output", att + "  %n = neg(%a) : f32[1,2,32,8]\n  output o = %a\n  output n = %n\n", false, false, "the log-sum-exp of its rows alone"},
		{"split-KV with its lse", "  %d = attention(%q1, %k, %v) {mask=\"none\", scale=0.5} : f32[1,2,1,8]\n" +
			"  %l = attention_lse(%q1, %k, %v) {mask=\"none\", scale=0.5} : f32[1,2,1]\n  output o = %d\n  output lse = %l\n", false, false, "split-KV"},
		{"appending", app + "  output o = %d\n  output k = %u\n", true, false, ""},
		{"appending, not in place", app + "  output o = %d\n  output k = %u\n", false, false, "not in place"},
		{"appending, cache not written", app + "  output o = %d\n", true, false, "which the kernel does not write"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := attnKernel(t, c.body)
			var op *ir.Value // the attention op, live or not
			for _, v := range g.Values {
				if v.Op == "attention" {
					op = v
				}
			}
			p := PlanAttentionOp(op, op.Args[2].Type.Shape[3])
			var err error
			if strings.Contains(c.body, "update_slice") {
				var caches map[int]*ir.Value
				caches, err = AttentionAppendedCaches(Kernel{Name: "k0", Graph: g, InPlace: c.inPlace}, p)
				if err == nil && caches[1] == nil {
					t.Errorf("appended caches %v, want K's", caches)
				}
			} else {
				var l *ir.Value
				l, err = ForwardLSE(g, op)
				if err == nil && (l != nil) != c.lse {
					t.Errorf("ForwardLSE = %v, want an LSE %v", l, c.lse)
				}
			}
			if (err != nil) != (c.err != "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
			if EmptyOutputs(g) {
				t.Error("EmptyOutputs of a kernel with elements")
			}
		})
	}
	empty := attnKernel(t, "  %z = slice(%q) {start=[0,0,0,0], limit=[1,2,0,8]} : f32[1,2,0,8]\n  output z = %z\n")
	if !EmptyOutputs(empty) {
		t.Error("EmptyOutputs of a zero-size output is false")
	}
}
