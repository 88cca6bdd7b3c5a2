package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// One kernel per template and case the NVVM producer covers, through the differential harness
// (the examples and random graphs reach few split reductions, bf16 or i64 paths).
func TestTemplates(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct{ name, src, template string }{
		// A train step's forward conv with the max_pool2d gradient's mask: the slice of each
		// window's first pre-pool pixel reaches the convolution at an index of its own, which
		// must resolve to the window's pixel ("conv2d cannot be computed inside this kernel").
		{"conv_pool_mask_f32", convPoolMask, "ffma"},
		{"conv_pool_mask_f16", strings.ReplaceAll(convPoolMask, "f32", "f16"), "tensor core"},
		{"sum_all", `graph g {
  input %x : f32[512,256]
  %0 = reduce_sum(%x) {axes=[0,1]} : f32[]
  output y = %0
}`, "split"},
		{"max_all_i32", `graph g {
  input %x : i32[40000]
  %0 = reduce_max(%x) {axes=[0]} : i32[]
  %1 = neg(%0) : i32[]
  output y = %1
}`, "split"},
		// The i64 identities are MaxInt64 and MinInt64, which float64 holds as ±2^63: converted
		// without saturating, reduce_min started from MinInt64 and returned it.
		{"min_all_i64", `graph g {
  input %x : i64[40000]
  %0 = reduce_min(%x) {axes=[0]} : i64[]
  output y = %0
}`, "split"},
		{"min_max_rows_i64", `graph g {
  input %x : i64[6,300]
  %0 = reduce_min(%x) {axes=[1]} : i64[6]
  %1 = reduce_max(%x) {axes=[1]} : i64[6]
  output y = %0
  output z = %1
}`, "row"},
		// Eight-half groups: with 16-byte alignment libNVVM 11.8 merged them into <8 x half>
		// accesses its backend rejects ("unsupported operation").
		{"relu_f16", `graph g {
  input %x : f16[896]
  %0 = relu(%x) : f16[896]
  output y = %0
}`, "loop"},
		{"sum_cols_f16", `graph g {
  input %x : f16[4,300,70]
  %0 = reduce_sum(%x) {axes=[1]} : f16[4,70]
  output y = %0
}`, "column"},
		{"min_cols_spread", `graph g {
  input %x : f32[300,70]
  %0 = reduce_min(%x) {axes=[0], keepdims=true} : f32[1,70]
  %1 = broadcast_in_dim(%0) {shape=[300,70], dims=[0,1]} : f32[300,70]
  %2 = sub(%x, %1) : f32[300,70]
  output y = %2
  output m = %0
}`, "column"},
		{"bf16_cast_chain", `graph g {
  input %x : bf16[33,65]
  input %y : i64[65]
  %0 = cast(%y) {to=bf16} : bf16[65]
  %1 = broadcast_in_dim(%0) {shape=[33,65], dims=[1]} : bf16[33,65]
  %2 = mul(%x, %1) : bf16[33,65]
  %3 = cast(%2) {to=u8} : u8[33,65]
  %4 = max(%2, %x) : bf16[33,65]
  output a = %3
  output b = %4
}`, "loop"},
		{"transpose_mul", `graph g {
  input %x : f32[70,3,40]
  input %y : f32[40,3,70]
  %0 = transpose(%x) {perm=[2,1,0]} : f32[40,3,70]
  %1 = mul(%0, %y) : f32[40,3,70]
  output z = %1
}`, "transpose tile"},
		{"transpose_bool", `graph g {
  input %x : bool[48,33]
  %0 = transpose(%x) {perm=[1,0]} : bool[33,48]
  %1 = not(%0) : bool[33,48]
  output z = %1
}`, "transpose tile"},
		{"avgpool_pad_then_sum", `graph g {
  input %x : f32[2,3,9,9]
  %0 = avg_pool2d(%x) {kernel=[3,3], stride=[2,2], padding=[1,1], count_include_pad=false} : f32[2,3,5,5]
  %1 = reduce_sum(%0) {axes=[2,3]} : f32[2,3]
  output y = %1
}`, "row"},
		{"maxpool_pad_then_max", `graph g {
  input %x : f16[2,3,8,8]
  %0 = max_pool2d(%x) {kernel=[2,2], stride=[2,2], padding=[1,1]} : f16[2,3,5,5]
  %1 = reduce_max(%0) {axes=[1]} : f16[2,5,5]
  output y = %1
}`, "column"},
		{"matmul_f64_bias", `graph g {
  input %x : f64[2,5,7]
  input %w : f64[2,7,3]
  input %b : f64[3]
  %0 = dot_general(%x, %w) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f64[2,5,3]
  %1 = broadcast_in_dim(%b) {shape=[2,5,3], dims=[2]} : f64[2,5,3]
  %2 = add(%0, %1) : f64[2,5,3]
  output y = %2
}`, "direct"},
		{"matmul_i32", `graph g {
  input %x : i32[6,9]
  input %w : i32[9,4]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : i32[6,4]
  output y = %0
}`, "direct"},
		{"conv_f64_grouped", `graph g {
  input %x : f64[1,4,7,7]
  input %w : f64[6,2,3,3]
  %0 = conv2d(%x, %w) {stride=[2,1], padding=[1,1], groups=2} : f64[1,6,4,7]
  output y = %0
}`, "direct"},
		{"matmul_ffma", `graph g {
  input %x : f32[9,16]
  input %w : f32[16,4]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[9,4]
  output y = %0
}`, "ffma"},
		// At most 8 rows: codegen/ptx's GEMV, here the direct template (exact), the two within
		// tolerance of each other.
		{"matmul_gemv_bias", `graph g {
  input %x : bf16[2,300]
  input %w : bf16[40,300]
  input %b : bf16[40]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : bf16[2,40]
  %1 = broadcast_in_dim(%b) {shape=[2,40], dims=[1]} : bf16[2,40]
  %2 = add(%0, %1) : bf16[2,40]
  output y = %2
}`, "gemv"},
		// Several k steps and tiles, edges in M, N and K, a batch, a bias and relu epilogue
		// stored in 4-column groups.
		{"matmul_ffma_batched_bias_relu", `graph g {
  input %x : f32[3,130,37]
  input %w : f32[3,37,136]
  input %b : f32[136]
  %0 = dot_general(%x, %w) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[3,130,136]
  %1 = broadcast_in_dim(%b) {shape=[3,130,136], dims=[2]} : f32[3,130,136]
  %2 = add(%0, %1) : f32[3,130,136]
  %3 = relu(%2) : f32[3,130,136]
  output y = %3
  output z = %0
}`, "ffma"},
		// Transposed operands: the lhs copies along its free dim, the rhs along k.
		{"matmul_ffma_transposed", `graph g {
  input %x : f32[21,70]
  input %w : f32[45,21]
  %0 = transpose(%x) {perm=[1,0]} : f32[70,21]
  %1 = transpose(%w) {perm=[1,0]} : f32[21,45]
  %2 = dot_general(%0, %1) {lhs_contract=[1], rhs_contract=[0]} : f32[70,45]
  output y = %2
}`, "ffma"},
		// A generic operand: heads merged back through a transpose (not strided).
		{"matmul_ffma_generic", `graph g {
  input %x : f32[2,5,3,4]
  input %w : f32[12,7]
  %0 = transpose(%x) {perm=[0,2,1,3]} : f32[2,3,5,4]
  %1 = reshape(%0) {shape=[6,20]} : f32[6,20]
  %2 = reshape(%1) {shape=[10,12]} : f32[10,12]
  %3 = dot_general(%2, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[10,7]
  output y = %3
}`, "ffma"},
		// libdevice's __nv_sinf keeps its Payne–Hanek words in a 32-byte local array here (not
		// a spill): the harness allows that frame and no more.
		{"matmul_ffma_sin", `graph g {
  input %x : f32[40,24]
  input %w : f32[24,36]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[40,36]
  %1 = sin(%0) : f32[40,36]
  output y = %1
}`, "ffma"},
		{"conv_ffma", `graph g {
  input %x : f32[2,3,11,9]
  input %w : f32[8,3,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[2,8,11,9]
  output y = %0
}`, "ffma"},
		{"conv_ffma_grouped_strided_bias", `graph g {
  input %x : f32[1,4,12,12]
  input %w : f32[6,2,3,2]
  input %b : f32[6]
  %0 = conv2d(%x, %w) {stride=[2,1], padding=[1,0], dilation=[1,2], groups=2} : f32[1,6,6,10]
  %1 = broadcast_in_dim(%b) {shape=[1,6,6,10], dims=[1]} : f32[1,6,6,10]
  %2 = add(%0, %1) : f32[1,6,6,10]
  %3 = tanh(%2) : f32[1,6,6,10]
  output y = %3
}`, "ffma"},
		{"conv_ffma_maxpool", `graph g {
  input %x : f32[2,3,10,12]
  input %w : f32[16,3,3,3]
  input %b : f32[16]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[2,16,10,12]
  %1 = broadcast_in_dim(%b) {shape=[2,16,10,12], dims=[1]} : f32[2,16,10,12]
  %2 = add(%0, %1) : f32[2,16,10,12]
  %3 = relu(%2) : f32[2,16,10,12]
  %4 = max_pool2d(%3) {kernel=[2,2], stride=[2,2]} : f32[2,16,5,6]
  output y = %4
  output pre = %3
}`, "ffma"},
		{"conv_ffma_avgpool", `graph g {
  input %x : f32[1,2,8,6]
  input %w : f32[5,2,1,1]
  %0 = conv2d(%x, %w) : f32[1,5,8,6]
  %1 = avg_pool2d(%0) {kernel=[2,1], stride=[2,1]} : f32[1,5,4,6]
  output y = %1
}`, "ffma"},
		{"matmul_f16_mma", `graph g {
  input %x : f16[130,72]
  input %w : f16[72,136]
  input %b : f16[136]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f16[130,136]
  %1 = broadcast_in_dim(%b) {shape=[130,136], dims=[1]} : f16[130,136]
  %2 = add(%0, %1) : f16[130,136]
  output y = %2
}`, "tensor core"},
		// bf16, batched, the rhs stored [N, K] (k contiguous: ldmatrix without .trans), an odd
		// N (no paired stores, fragment epilogue).
		{"matmul_bf16_mma_nt", `graph g {
  input %x : bf16[2,40,48]
  input %w : bf16[2,37,48]
  %0 = dot_general(%x, %w) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2]} : bf16[2,40,37]
  output y = %0
}`, "tensor core"},
		// An odd contiguous dim: 16-bit element copies through registers.
		{"matmul_f16_mma_odd", `graph g {
  input %x : f16[33,21]
  input %w : f16[21,19]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f16[33,19]
  output y = %0
}`, "tensor core"},
		{"conv_f16_mma", `graph g {
  input %x : f16[2,8,10,10]
  input %w : f16[16,8,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f16[2,16,10,10]
  %1 = relu(%0) : f16[2,16,10,10]
  output y = %1
}`, "tensor core"},
		{"conv_bf16_mma_maxpool", `graph g {
  input %x : bf16[1,4,8,12]
  input %w : bf16[8,4,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1]} : bf16[1,8,8,12]
  %1 = max_pool2d(%0) {kernel=[2,2], stride=[2,2]} : bf16[1,8,4,6]
  output y = %1
}`, "tensor core"},
		{"maxpool_staged", `graph g {
  input %x : f32[2,3,20,20]
  %0 = max_pool2d(%x) {kernel=[2,2], stride=[2,2]} : f32[2,3,10,10]
  %1 = relu(%0) : f32[2,3,10,10]
  output y = %1
}`, "staged loop"},
		{"avgpool_staged_pad", `graph g {
  input %x : f16[2,5,13,11]
  %0 = avg_pool2d(%x) {kernel=[3,3], stride=[2,2], padding=[1,1], count_include_pad=false} : f16[2,5,7,6]
  output y = %0
}`, "staged loop"},
		{"concat_staged", `graph g {
  input %x : f32[6,57]
  input %h : f32[6,128]
  %0 = concat(%x, %h) {axis=1} : f32[6,185]
  %1 = neg(%0) : f32[6,185]
  output y = %1
}`, "staged loop"},
		// Dropout: philox_uniform bit for bit with codegen/ptx and the reference, in groups and
		// the elements after them, with a stream above 32 bits.
		{"dropout_philox", `graph g {
  input %k : i64[]
  input %x : f32[5,206]
  %0 = philox_uniform(%k) {shape=[5,206], stream=4294967299} : f32[5,206]
  %1 = constant() {dtype=f32, shape=[5,206], value=[0.25]} : f32[5,206]
  %2 = lt(%0, %1) : bool[5,206]
  %3 = constant() {dtype=f32, shape=[5,206], value=[0.0]} : f32[5,206]
  %4 = select(%2, %3, %x) : f32[5,206]
  output u = %0
  output y = %4
}`, "loop"},
		// A padded input of 12 bytes (the loads of its three elements must not become one
		// 16-byte load), beside philox_uniform.
		{"philox_pad_small", `graph g {
  input %k : i64[]
  input %x : f32[3]
  %0 = philox_uniform(%k) {shape=[4]} : f32[4]
  %1 = constant() {dtype=f32, shape=[4], value=[0.25]} : f32[4]
  %2 = lt(%0, %1) : bool[4]
  %3 = pad(%x) {high=[0], low=[1], value=0.0} : f32[4]
  %4 = constant() {dtype=f32, shape=[4], value=[0.0]} : f32[4]
  %5 = select(%2, %3, %4) : f32[4]
  output u = %0
  output y = %5
}`, "loop"},
		{"concat_staged_i8_axis0", `graph g {
  input %x : i8[3,7,5]
  input %y : i8[2,7,5]
  input %z : i8[4,7,5]
  %0 = concat(%x, %y, %z) {axis=0} : i8[9,7,5]
  output y = %0
}`, "staged loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse(tc.name+".gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			k := plan.Kernel{Name: "k_" + tc.name, Graph: g}
			if tpl := plan.Template(k); tpl == "contraction" {
				c, err := plan.ContractionPlan(k, plan.Target{SM: 80})
				if err != nil || c.Kind != tc.template {
					t.Fatalf("plan %q, %v; want %s", c.Kind, err, tc.template)
				}
			} else if tpl == "reduction" {
				rp, err := plan.ReducePlan(k)
				if err != nil || rp.Kind != tc.template {
					t.Fatalf("plan %q, %v; want %s", rp.Kind, err, tc.template)
				}
			} else if tpl != tc.template {
				t.Fatalf("template %q, want %s", tpl, tc.template)
			}
			checkModule(t, p, []plan.Kernel{k}, 7)
		})
	}
}

// The tf32 tensor-core contractions (--tf32): an f32 matmul whose rhs is stored [K, N]
// (fragments read word by word, cvt.rna rounding), one stored [N, K] (ldmatrix), and a conv2d
// with a bias: both producers' kernels agree bit for bit and with the reference within tf32's
// tolerance.
func TestTemplatesTF32(t *testing.T) {
	p := requireProducer(t)
	target := plan.Target{SM: 80, TF32: true}
	for _, tc := range []struct{ name, src string }{
		{"matmul_tf32", `graph g {
  input %x : f32[70,40]
  input %w : f32[40,136]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[70,136]
  %1 = relu(%0) : f32[70,136]
  output y = %1
}`},
		{"matmul_tf32_nt", `graph g {
  input %x : f32[33,20]
  input %w : f32[50,20]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[33,50]
  output y = %0
}`},
		{"conv_tf32_bias", `graph g {
  input %x : f32[1,3,9,9]
  input %w : f32[8,3,3,3]
  input %b : f32[8]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[1,8,9,9]
  %1 = broadcast_in_dim(%b) {shape=[1,8,9,9], dims=[1]} : f32[1,8,9,9]
  %2 = add(%0, %1) : f32[1,8,9,9]
  output y = %2
}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse(tc.name+".gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			k := plan.Kernel{Name: "k_" + tc.name, Graph: g}
			if c, err := plan.ContractionPlan(k, target); err != nil || c.Kind != "tensor core" {
				t.Fatalf("plan %q, %v; want tensor core", c.Kind, err)
			}
			checkModuleFor(t, p, []plan.Kernel{k}, 7, target)
		})
	}
}

// convPoolMask is a train step's forward conv kernel (f32): the conv, bias and relu, the
// max_pool2d, and its gradient's mask.
const convPoolMask = `graph g {
  input %x : f32[2,3,8,8]
  param %w : f32[5,3,3,3]
  param %b : f32[5]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[2,5,8,8]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[2,5,8,8]} : f32[2,5,8,8]
  %2 = add(%0, %1) : f32[2,5,8,8]
  %3 = relu(%2) : f32[2,5,8,8]
  %4 = max_pool2d(%3) {kernel=[2,2], stride=[2,2]} : f32[2,5,4,4]
  %5 = slice(%3) {start=[0,0,0,0], limit=[2,5,7,7], stride=[1,1,2,2]} : f32[2,5,4,4]
  %6 = eq(%5, %4) : bool[2,5,4,4]
  output pre = %3
  output p = %4
  output mask = %6
}`
