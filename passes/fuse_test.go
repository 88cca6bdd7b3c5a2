package passes_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

func compile(t *testing.T, src string, opt passes.Options) *passes.Result {
	t.Helper()
	g, err := ir.Parse("test.gir", []byte("graph t {\n"+src+"\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	opt.VerifyEach = true
	res, err := passes.Run(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkEquivalent(t, g, res, 1)
	return res
}

func labels(kg *passes.KernelGraph) string {
	var ls []string
	for _, k := range kg.Kernels {
		ls = append(ls, k.Name+":"+k.Kind.String())
	}
	return strings.Join(ls, " ")
}

// Narrow assertions on small graphs, one per fusion rule (docs/fusion.md).
func TestFusionRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		opt  passes.FusionOptions
		want string // kernel names and kinds in order
	}{
		{"a: loop fusion through views", `
  input %x : f32[2,3]
  input %y : f32[3,2]
  %0 = transpose(%x) {perm=[1,0]} : f32[3,2]
  %1 = exp(%0) : f32[3,2]
  %2 = add(%1, %y) : f32[3,2]
  %3 = reshape(%2) {shape=[6]} : f32[6]
  %4 = slice(%3) {start=[1], limit=[5]} : f32[4]
  %5 = neg(%4) : f32[4]
  output z = %5`, passes.FusionOptions{}, "k0_exp_add_neg:loop"},
		{"b+c: softmax is one row kernel", `
  input %x : f32[4,8]
  %0 = reduce_max(%x) {axes=[1], keepdims=true} : f32[4,1]
  %1 = broadcast_in_dim(%0) {dims=[0,1], shape=[4,8]} : f32[4,8]
  %2 = sub(%x, %1) : f32[4,8]
  %3 = exp(%2) : f32[4,8]
  %4 = reduce_sum(%3) {axes=[1]} : f32[4]
  %5 = broadcast_in_dim(%4) {dims=[0], shape=[4,8]} : f32[4,8]
  %6 = div(%3, %5) : f32[4,8]
  output y = %6`, passes.FusionOptions{}, "k0_softmax:row"},
		{"c: a row too long for a block is streamed, still in one kernel", `
  input %x : f32[2,8]
  %0 = reduce_max(%x) {axes=[1], keepdims=true} : f32[2,1]
  %1 = broadcast_in_dim(%0) {dims=[0,1], shape=[2,8]} : f32[2,8]
  %2 = sub(%x, %1) : f32[2,8]
  %3 = exp(%2) : f32[2,8]
  %4 = reduce_sum(%3) {axes=[1], keepdims=true} : f32[2,1]
  %5 = broadcast_in_dim(%4) {dims=[0,1], shape=[2,8]} : f32[2,8]
  %6 = div(%3, %5) : f32[2,8]
  output y = %6`, passes.FusionOptions{MaxRow: 4}, "k0_softmax:row"},
		{"d: bias, activation, residual and cast in the matmul's store", `
  input %x : f32[2,3]
  input %r : f32[2,4]
  param %w : f32[4,3]
  param %b : f32[4]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,4]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[2,4]} : f32[2,4]
  %2 = add(%0, %1) : f32[2,4]
  %3 = relu(%2) : f32[2,4]
  %4 = add(%3, %r) : f32[2,4]
  %5 = cast(%4) {to=f16} : f16[2,4]
  output y = %5`, passes.FusionOptions{}, "k0_matmul_bias_relu:contraction"},
		{"d: a view on the epilogue path ends the epilogue", `
  input %x : f32[2,3]
  param %w : f32[4,3]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,4]
  %1 = transpose(%0) {perm=[1,0]} : f32[4,2]
  %2 = tanh(%1) : f32[4,2]
  output y = %2`, passes.FusionOptions{}, "k0_matmul:contraction k1_tanh:loop"},
		{"e: siblings reading the same input share a kernel", `
  input %x : f32[8]
  %0 = exp(%x) : f32[8]
  %1 = neg(%x) : f32[8]
  output a = %0
  output b = %1`, passes.FusionOptions{}, "k0_exp_neg:loop"},
		{"an expensive producer is not recomputed per broadcast element", `
  input %x : f32[4]
  input %y : f32[100,4]
  %0 = exp(%x) : f32[4]
  %1 = broadcast_in_dim(%0) {dims=[1], shape=[100,4]} : f32[100,4]
  %2 = add(%1, %y) : f32[100,4]
  output z = %2`, passes.FusionOptions{}, "k0_exp:loop k1_add:loop"},
		{"a cheap producer is", `
  input %x : f32[4]
  input %y : f32[100,4]
  %0 = neg(%x) : f32[4]
  %1 = broadcast_in_dim(%0) {dims=[1], shape=[100,4]} : f32[100,4]
  %2 = add(%1, %y) : f32[100,4]
  output z = %2`, passes.FusionOptions{}, "k0_neg_add:loop"},
		{"kernel size bound", `
  input %x : f32[8]
  %0 = exp(%x) : f32[8]
  %1 = neg(%0) : f32[8]
  %2 = tanh(%1) : f32[8]
  %3 = abs(%2) : f32[8]
  output y = %3`, passes.FusionOptions{MaxOps: 2}, "k0_exp_neg:loop k1_tanh_abs:loop"},
		{"operand bound", `
  input %a : f32[8]
  input %b : f32[8]
  input %c : f32[8]
  %0 = add(%a, %b) : f32[8]
  %1 = add(%0, %c) : f32[8]
  output y = %1`, passes.FusionOptions{MaxReads: 2}, "k0_add:loop k1_add:loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, tc.src, passes.Options{Fusion: tc.opt})
			if got := labels(res.Kernels); got != tc.want {
				t.Errorf("kernels %s, want %s\n%s", got, tc.want, res.Kernels)
			}
		})
	}
}

// The example models fuse as docs/fusion.md promises.
func TestExampleFusion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(*frontend.Builder)
		check func(t *testing.T, kg *passes.KernelGraph)
	}{
		{"cnn", exampleModel("cnn"), func(t *testing.T, kg *passes.KernelGraph) {
			want := "k0_conv_bias_relu:contraction k1_maxpool:loop k2_conv_bias_relu:contraction k3_maxpool:loop " +
				"k4_matmul_bias_relu:contraction k5_matmul_bias:contraction"
			if got := labels(kg); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		}},
		{"transformer", exampleModel("transformer"), func(t *testing.T, kg *passes.KernelGraph) {
			if got := labels(kg); strings.Count(got, "layernorm:row") != 2 || strings.Count(got, "softmax:row") != 1 || strings.Contains(got, ":loop") {
				t.Errorf("want two layer norms and one softmax as row kernels and no loop kernels: %s", got)
			}
		}},
		{"gpt", exampleModel("gpt"), func(t *testing.T, kg *passes.KernelGraph) {
			for _, k := range kg.Kernels {
				for _, b := range k.Writes {
					// No view and no mask is ever materialized: only contraction and row
					// kernels write.
					if k.Kind == passes.Loop {
						t.Errorf("loop kernel %s writes %s : %s", k.Name, b.Name, b.Type)
					}
				}
			}
			if !strings.HasPrefix(labels(kg), "k0_layernorm:row") {
				t.Errorf("the embedding gathers are not fused into the first layer norm: %s", labels(kg))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, res := compileExample(t, tc.name, tc.model)
			tc.check(t, res.Kernels)
		})
	}
}

func exampleModel(name string) func(*frontend.Builder) {
	for _, ex := range exampleModels {
		if ex.name == name {
			return ex.model
		}
	}
	return nil
}
