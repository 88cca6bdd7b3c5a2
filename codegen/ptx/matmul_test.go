package ptx

import (
	"fmt"
	"regexp"
	"testing"
)

var matmulCases = []struct{ name, src string }{
	{"matmul", `graph g {
  input %a : f32[M,K]
  input %b : f32[K,N]
  %0 = dot_general(%a, %b) {lhs_contract=[1], rhs_contract=[0]} : f32[M,N]
  output y = %0
}`},
	{"linear_bias_relu", `graph g {
  input %x : f32[M,K]
  param %w : f32[N,K]
  param %bias : f32[N]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[M,N]
  %1 = broadcast_in_dim(%bias) {dims=[1], shape=[M,N]} : f32[M,N]
  %2 = add(%0, %1) : f32[M,N]
  %3 = relu(%2) : f32[M,N]
  output y = %3
}`},
	{"transposed_lhs_residual_cast", `graph g {
  input %a : f32[K,M]
  input %b : f32[K,N]
  input %r : f32[M,N]
  %0 = dot_general(%a, %b) {lhs_contract=[0], rhs_contract=[0]} : f32[M,N]
  %1 = add(%0, %r) : f32[M,N]
  %2 = cast(%1) {to=f16} : f16[M,N]
  output y = %2
}`},
	{"batched_attention_scores", `graph g {
  input %q : f32[2,3,M,K]
  input %k : f32[2,3,N,K]
  %0 = dot_general(%q, %k) {lhs_batch=[0,1], rhs_batch=[0,1], lhs_contract=[3], rhs_contract=[3]} : f32[2,3,M,N]
  %1 = constant() {dtype=f32, shape=[], value=[0.125]} : f32[]
  %2 = broadcast_in_dim(%1) {dims=[], shape=[2,3,M,N]} : f32[2,3,M,N]
  %3 = mul(%0, %2) : f32[2,3,M,N]
  output y = %3
}`},
}

var matmulShapes = [][3]int{{1, 1, 1}, {3, 5, 7}, {128, 128, 8}, {130, 67, 33}, {200, 300, 20}}

func instantiateMNK(src string, m, n, k int) string {
	return replaceAll(replaceAll(replaceAll(src, "M", fmt.Sprint(m)), "N", fmt.Sprint(n)), "K", fmt.Sprint(k))
}

func TestMatmul(t *testing.T) {
	for _, c := range matmulCases {
		for _, s := range matmulShapes {
			if c.name == "batched_attention_scores" && s[0] > 130 {
				continue // six of them: keep the simulation short
			}
			t.Run(fmt.Sprintf("%s_%dx%dx%d", c.name, s[0], s[1], s[2]), func(t *testing.T) {
				g := parse(t, instantiateMNK(c.src, s[0], s[1], s[2]))
				res := checkKernel(t, Kernel{Name: "k_" + c.name, Graph: g}, inputsFor(g, uint64(s[0]*s[1]), 1), false)
				if res != nil {
					t.Logf("registers %v", res.regs)
				}
			})
		}
	}
}

// The fused epilogue stores each element once: no st.global of the pre-activation, and the
// main loop is cp.async + 128-bit shared loads + FFMA.
func TestMatmulAsm(t *testing.T) {
	g := parse(t, instantiateMNK(matmulCases[1].src, 64, 64, 64))
	text, _, err := Generate(Kernel{Name: "k_linear_bias_relu", Graph: g}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	// 64 register-block elements, one store each: 16 stores of 4 (N is a multiple of 4).
	if n := len(regexp.MustCompile(`st\.global\.v4\.f32`).FindAllString(text, -1)); n != 16 {
		t.Errorf("%d st.global.v4.f32, want 16 (one per 4 register-block elements)", n)
	}
	if regexp.MustCompile(`st\.global\.f32`).MatchString(text) {
		t.Error("scalar stores beside the vector ones")
	}
	for _, re := range []string{`cp\.async\.ca\.shared\.global`, `ld\.shared\.v4\.f32`, `fma\.rn\.f32`, `ld\.global\.v4\.f32`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("missing %s", re)
		}
	}
	// The stored value is the relu's select, never the sum before it.
	for _, m := range regexp.MustCompile(`st\.global\.v4\.f32 \[[^\]]+\], \{([^}]*)\}`).FindAllStringSubmatch(text, -1) {
		for _, r := range regexp.MustCompile(`%f\d+`).FindAllString(m[1], -1) {
			if !regexp.MustCompile(`selp\.f32 ` + r + `,`).MatchString(text) {
				t.Errorf("stored %s is not a relu result", r)
			}
		}
	}
}
