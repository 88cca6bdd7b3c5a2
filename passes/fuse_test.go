package passes_test

import (
	"fmt"
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
		{"views count against the size bound", `
  input %x : f32[8]
  %0 = slice(%x) {start=[0], limit=[4]} : f32[4]
  %1 = slice(%x) {start=[4], limit=[8]} : f32[4]
  %2 = add(%0, %1) : f32[4]
  %3 = neg(%2) : f32[4]
  output y = %3`, passes.FusionOptions{MaxOps: 3}, "k0_add:loop k1_neg:loop"},
		{"a view that finds its kernel full is read from memory", `
  input %x : f32[8]
  %0 = reshape(%x) {shape=[2,4]} : f32[2,4]
  %1 = transpose(%0) {perm=[1,0]} : f32[4,2]
  %2 = neg(%1) : f32[4,2]
  output y = %2`, passes.FusionOptions{MaxOps: 2}, "k0_copy:loop k1_neg:loop"},
		{"the operand bound counts buffers: slices of one input read it once", `
  input %x : f32[8]
  %0 = slice(%x) {start=[0], limit=[4]} : f32[4]
  %1 = slice(%x) {start=[2], limit=[6]} : f32[4]
  %2 = slice(%x) {start=[4], limit=[8]} : f32[4]
  %3 = add(%0, %1) : f32[4]
  %4 = mul(%3, %2) : f32[4]
  output z = %4`, passes.FusionOptions{MaxReads: 1}, "k0_add_mul:loop"},
		// exp of the column sums makes the tanh kernel a row group over them (becomeRow); neg,
		// which the abs kernel reads too, joins it; MaxOps keeps the sum out, so the kernel stays
		// a loop over [4,3] and cannot write neg's f32[3]: neg goes with the sum.
		{"a row group waiting for its reduction writes no per-row value", `
  input %x : f32[4,3]
  %0 = reduce_sum(%x) {axes=[0]} : f32[3]
  %1 = neg(%0) : f32[3]
  %2 = exp(%1) : f32[3]
  %3 = broadcast_in_dim(%2) {dims=[1], shape=[4,3]} : f32[4,3]
  %4 = sub(%x, %3) : f32[4,3]
  %5 = tanh(%4) : f32[4,3]
  %6 = abs(%1) : f32[3]
  output y = %5
  output z = %6`, passes.FusionOptions{MaxOps: 5}, "k0_sum:row k1_exp_sub_tanh:loop"},
		// BatchNorm at inference: scale and shift depend on parameters alone and would be
		// evaluated once per pixel by the loop: they get a kernel of their own over the channels
		// (the bindtime pass then runs it when weights are bound).
		{"a parameter-only value a broadcast spreads is computed once per element", `
  input %x : f32[2,4,3,3]
  param %g : f32[4]
  param %m : f32[4]
  param %b : f32[4]
  %0 = mul(%g, %m) : f32[4]
  %1 = sub(%b, %0) : f32[4]
  %2 = broadcast_in_dim(%g) {dims=[1], shape=[2,4,3,3]} : f32[2,4,3,3]
  %3 = mul(%x, %2) : f32[2,4,3,3]
  %4 = broadcast_in_dim(%1) {dims=[1], shape=[2,4,3,3]} : f32[2,4,3,3]
  %5 = add(%3, %4) : f32[2,4,3,3]
  output y = %5`, passes.FusionOptions{}, "k0_mul_sub:loop k1_mul_add:loop"},
		// A nearest upsampling repeats each element of the matmul's result twice: the bias and
		// relu go to the matmul's store, evaluated once per element, not to the loop over the
		// upsampled result (which then only moves data).
		{"a contraction's tail that a broadcast repeats stays in the contraction's epilogue", `
  input %x : f32[4,3]
  param %w : f32[3,6]
  param %c : f32[6]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,6]
  %1 = broadcast_in_dim(%c) {dims=[1], shape=[4,6]} : f32[4,6]
  %2 = add(%0, %1) : f32[4,6]
  %3 = relu(%2) : f32[4,6]
  %4 = broadcast_in_dim(%3) {dims=[0,1], shape=[4,6,2]} : f32[4,6,2]
  %5 = reshape(%4) {shape=[4,12]} : f32[4,12]
  %6 = neg(%5) : f32[4,12]
  output y = %6`, passes.FusionOptions{}, "k0_matmul_bias_relu:contraction k1_neg:loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, tc.src, passes.Options{Fusion: tc.opt})
			if got := labels(res.Kernels); got != tc.want {
				t.Errorf("kernels %s, want %s\n%s", got, tc.want, res.Kernels)
			}
		})
	}
}

// layerNorm normalizes the rows of %x and scales and shifts them by %g and %b.
const layerNorm = `
  %0 = constant() {dtype=f32, shape=[2], value=[0.125]} : f32[2]
  %1 = reduce_sum(%x) {axes=[1]} : f32[2]
  %2 = mul(%1, %0) : f32[2]
  %3 = broadcast_in_dim(%2) {dims=[0], shape=[2,8]} : f32[2,8]
  %4 = sub(%x, %3) : f32[2,8]
  %5 = mul(%4, %4) : f32[2,8]
  %6 = reduce_sum(%5) {axes=[1]} : f32[2]
  %7 = mul(%6, %0) : f32[2]
  %8 = rsqrt(%7) : f32[2]
  %9 = broadcast_in_dim(%8) {dims=[0], shape=[2,8]} : f32[2,8]
  %10 = mul(%4, %9) : f32[2,8]
  %11 = broadcast_in_dim(%g) {dims=[1], shape=[2,8]} : f32[2,8]
  %12 = mul(%10, %11) : f32[2,8]
  %13 = broadcast_in_dim(%b) {dims=[1], shape=[2,8]} : f32[2,8]
  %14 = add(%12, %13) : f32[2,8]`

// Whole kernel graphs, before and after fusion, for the rules whose shape a name cannot show.
func TestFusedKernelGraphs(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"c: layer norm is one row kernel: mean, variance, normalize, scale and shift", `
  input %x : f32[2,8]
  param %g : f32[8]
  param %b : f32[8]` + layerNorm + `
  output y = %14`, `kernels t {
  input %x : f32[2,8]
  param %g : f32[8]
  param %b : f32[8]
  kernel k0_layernorm row [2,8] axes=[1] reads(%x, %g, %b) writes(%y) {` + strings.ReplaceAll(layerNorm, "\n", "\n  ") + `
    output y = %14
  }
  output %y : f32[2,8]
}
`},
		{"e: a value two kernels need is an extra output of the kernel computing it", `
  input %x : f32[2,3]
  input %c : f32[2,3]
  param %w : f32[4,3]
  %0 = add(%x, %c) : f32[2,3]
  %1 = tanh(%0) : f32[2,3]
  %2 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,4]
  output h = %1
  output y = %2`, `kernels t {
  input %x : f32[2,3]
  input %c : f32[2,3]
  param %w : f32[4,3]
  kernel k0_add_tanh loop [2,3] reads(%x, %c) writes(%t3, %h) {
    %0 = add(%x, %c) : f32[2,3]
    %1 = tanh(%0) : f32[2,3]
    output t3 = %0
    output h = %1
  }
  kernel k1_matmul contraction [2,4] reads(%t3, %w) writes(%y) {
    %0 = dot_general(%t3, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,4]
    output y = %0
  }
  output %h : f32[2,3]
  output %y : f32[2,4]
}
`},
		{"e: siblings over one space reading one buffer become one kernel with two outputs", `
  input %x : f32[4,8]
  %0 = reduce_max(%x) {axes=[1]} : f32[4]
  %1 = reduce_sum(%x) {axes=[1]} : f32[4]
  output m = %0
  output s = %1`, `kernels t {
  input %x : f32[4,8]
  kernel k0_max_sum row [4,8] axes=[1] reads(%x) writes(%m, %s) {
    %0 = reduce_max(%x) {axes=[1]} : f32[4]
    %1 = reduce_sum(%x) {axes=[1]} : f32[4]
    output m = %0
    output s = %1
  }
  output %m : f32[4]
  output %s : f32[4]
}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compile(t, tc.src, passes.Options{}).Kernels.String(); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// CheckKernels holds every kernel to the bounds fusion formed it under.
func TestCheckKernelsBounds(t *testing.T) {
	src := `
  input %x : f32[8]
  input %y : f32[8]
  input %w : f32[8]
  %0 = exp(%x) : f32[8]
  %1 = neg(%y) : f32[8]
  %2 = add(%0, %1) : f32[8]
  %3 = mul(%2, %w) : f32[8]
  output z = %3`
	for _, tc := range []struct {
		bounds passes.FusionOptions
		want   string // "": no error
	}{
		{passes.FusionOptions{MaxOps: 3}, "computes 4 ops, more than MaxOps (3)"},
		{passes.FusionOptions{MaxReads: 2}, "reads 3 buffers, more than MaxReads (2)"},
		{passes.FusionOptions{MaxOps: 4, MaxReads: 3}, ""},
	} {
		kg := compile(t, src, passes.Options{}).Kernels
		kg.Bounds = tc.bounds
		err := passes.CheckKernels(kg)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("bounds %+v: got %v, want %q", tc.bounds, err, tc.want)
		}
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
			// Each 2×2 max-pool runs in its convolution's epilogue (rule d): the conv results
			// never reach memory.
			want := "k0_conv_bias_relu_maxpool:contraction k1_conv_bias_relu_maxpool:contraction " +
				"k2_matmul_bias_relu:contraction k3_matmul_bias:contraction"
			if got := labels(kg); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		}},
		{"transformer", exampleModel("transformer"), func(t *testing.T, kg *passes.KernelGraph) {
			// The attention kernel reads q, k and v through the heads' views in place.
			if got := labels(kg); strings.Count(got, "layernorm:row") != 2 || strings.Count(got, "attention:attention") != 1 || strings.Contains(got, ":loop") {
				t.Errorf("want two layer norms as row kernels, one attention kernel and no loop kernels: %s", got)
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
		if ex.Name == name {
			return ex.Model
		}
	}
	return nil
}

// An index-only value that one kernel applies as a view and another computes as a member (it
// did not fit that kernel as a view, under MaxReads) is not written to memory: the first
// kernel recomputes it, so nothing would read the store (found by FuzzPipeline, where a
// persistent kernel then had nowhere to put it).
func TestRecomputedValueNotWritten(t *testing.T) {
	const src = `
  %0 = iota() {dim=0, dtype=f32, shape=[4]} : f32[4]
  %1 = neg(%0) : f32[4]
  %2 = abs(%0) : f32[4]
  %3 = add(%1, %2) : f32[4]
  %4 = neg(%3) : f32[4]
  %5 = sub(%4, %3) : f32[4]
  output p = %4
  output q = %5`
	kg := compile(t, src, passes.Options{Fusion: passes.FusionOptions{MaxOps: 4, MaxReads: 2}}).Kernels
	var got []string
	for _, k := range kg.Kernels {
		var ws []string
		for _, b := range k.Writes {
			ws = append(ws, b.Name)
		}
		got = append(got, fmt.Sprintf("%s writes(%s)", k.Name, strings.Join(ws, ",")))
	}
	if want := "k0_neg writes(p) k1_add_sub writes(q)"; strings.Join(got, " ") != want {
		t.Errorf("got %s, want %s\n%s", strings.Join(got, " "), want, kg)
	}
}
