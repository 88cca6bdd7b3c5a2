package onnx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// nbits describes a MatMulNBits model; zero values take the valid default of its field.
type nbits struct {
	k, n, bits, bs int
	bShape         []int // default [N, K/bs, bs·bits/8]
	sShape         []int // default [N, K/bs]
	zShape         []int // nil: no zero points
	zFloat         bool
	zInput         bool // the zero points are a graph input, not an initializer
	gIdx           []int64
	aK             int // A's last dim; default K
	noK            bool
	extra          *onnxpb.AttributeProto
	op             string
}

func (c nbits) model() []byte {
	blocks := c.k / c.bs
	if c.bShape == nil {
		c.bShape = []int{c.n, blocks, c.bs * c.bits / 8}
	}
	if c.sShape == nil {
		c.sShape = []int{c.n, blocks}
	}
	if c.aK == 0 {
		c.aK = c.k
	}
	if c.op == "" {
		c.op = "MatMulNBits"
	}
	u8 := func(name string, shape []int) *onnxpb.TensorProto {
		x := tensor.New(ir.T(ir.U8, shape...))
		for i := range x.I {
			x.I[i] = int64(i*37) % 256
		}
		return encodeTensor(name, x)
	}
	sc := make([]float64, ir.Shape(c.sShape).NumElements())
	for i := range sc {
		sc[i] = 0.01
	}
	inits := []*onnxpb.TensorProto{u8("B", c.bShape), floats("scales", c.sShape, sc...)}
	ins := []string{"A", "B", "scales"}
	if c.zShape != nil {
		if c.zFloat {
			inits = append(inits, floats("zp", c.zShape, make([]float64, ir.Shape(c.zShape).NumElements())...))
		} else if !c.zInput {
			inits = append(inits, u8("zp", c.zShape))
		}
		ins = append(ins, "zp")
	}
	if c.gIdx != nil {
		if c.zShape == nil {
			ins = append(ins, "")
		}
		g := tensor.New(ir.T(ir.I32, len(c.gIdx)))
		copy(g.I, c.gIdx)
		inits = append(inits, encodeTensor("g_idx", g))
		ins = append(ins, "g_idx")
	}
	attrs := []*onnxpb.AttributeProto{attrI("N", int64(c.n)), attrI("bits", int64(c.bits)), attrI("block_size", int64(c.bs))}
	if !c.noK {
		attrs = append(attrs, attrI("K", int64(c.k)))
	}
	if c.extra != nil {
		attrs = append(attrs, c.extra)
	}
	nd := nodeP(c.op, "q_proj", ins, []string{"Y"}, attrs...)
	nd.Domain = ptr("com.microsoft")
	inputs := []*onnxpb.ValueInfoProto{valueInfo("A", onnxFloat, 1, c.aK)}
	if c.zInput {
		dims := make([]any, len(c.zShape))
		for i, d := range c.zShape {
			dims[i] = d
		}
		inputs = append(inputs, valueInfo("zp", onnxUint8, dims...))
	}
	g := &onnxpb.GraphProto{Name: ptr("nbits"), Input: inputs,
		Initializer: inits, Node: []*onnxpb.NodeProto{nd}, Output: []*onnxpb.ValueInfoProto{valueInfo("Y", onnxFloat, 1, c.n)}}
	m := &onnxpb.ModelProto{IrVersion: ptr(int64(8)), Graph: g, OpsetImport: []*onnxpb.OperatorSetIdProto{
		{Domain: ptr(""), Version: ptr(int64(13))}, {Domain: ptr("com.microsoft"), Version: ptr(int64(1))}}}
	data, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

// Valid MatMulNBits variants import; each bad one is one error naming the node and what is
// wrong with it. (The committed models in suite/testdata/exported check the values against a
// NumPy reference on the reference interpreter and the simulator.)
func TestMatMulNBitsImport(t *testing.T) {
	for _, c := range []struct {
		name string
		m    nbits
		want string // "" for success
	}{
		{"bits4", nbits{k: 64, n: 8, bits: 4, bs: 16}, ""},
		{"bits8", nbits{k: 64, n: 8, bits: 8, bs: 32}, ""},
		{"bits4_zp_odd_blocks", nbits{k: 48, n: 8, bits: 4, bs: 16, zShape: []int{8, 2}}, ""},
		{"bits4_zp_flat", nbits{k: 64, n: 8, bits: 4, bs: 16, zShape: []int{16}}, ""},
		{"flat_scales", nbits{k: 64, n: 8, bits: 4, bs: 16, sShape: []int{32}}, ""},
		{"trivial_g_idx", nbits{k: 32, n: 4, bits: 4, bs: 16, gIdx: []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}, ""},
		{"accuracy_level", nbits{k: 64, n: 8, bits: 4, bs: 16, extra: attrI("accuracy_level", 4)}, ""},

		{"bits3", nbits{k: 64, n: 8, bits: 3, bs: 16, bShape: []int{8, 4, 6}}, "attribute bits = 3 is not supported"},
		{"bits2", nbits{k: 64, n: 8, bits: 2, bs: 16}, "attribute bits = 2 is not supported"},
		{"packed_blob_short", nbits{k: 64, n: 8, bits: 4, bs: 16, bShape: []int{8, 4, 4}}, "input B is u8[8,4,4], want u8[8,4,8]"},
		{"packed_blocks_wrong", nbits{k: 64, n: 8, bits: 4, bs: 16, bShape: []int{8, 2, 8}}, "input B is u8[8,2,8]"},
		{"packed_n_wrong", nbits{k: 64, n: 8, bits: 4, bs: 16, bShape: []int{4, 4, 8}}, "input B is u8[4,4,8]"},
		{"scales_shape", nbits{k: 64, n: 8, bits: 4, bs: 16, sShape: []int{8, 2}}, "input scales is f32[8,2]"},
		{"scales_flat_short", nbits{k: 64, n: 8, bits: 4, bs: 16, sShape: []int{31}}, "input scales is f32[31]"},
		{"zero_points_shape", nbits{k: 64, n: 8, bits: 4, bs: 16, zShape: []int{8, 4}}, "input zero_points is u8[8,4], want u8[8, 2]"},
		{"zero_points_float", nbits{k: 64, n: 8, bits: 4, bs: 16, zShape: []int{8, 4}, zFloat: true}, "zero_points of f32 is not supported"},
		{"a_not_k", nbits{k: 64, n: 8, bits: 4, bs: 16, aK: 32}, "input A is f32[1,32], want"},
		{"block_size_not_pow2", nbits{k: 48, n: 8, bits: 4, bs: 24}, "block_size = 24 is not a power of two"},
		{"k_not_multiple", nbits{k: 40, n: 8, bits: 4, bs: 16, bShape: []int{8, 3, 8}, sShape: []int{8, 3}}, "K = 40 not a multiple of block_size = 16"},
		{"missing_K", nbits{k: 64, n: 8, bits: 4, bs: 16, noK: true}, "attribute K is required"},
		{"unknown_attribute", nbits{k: 64, n: 8, bits: 4, bs: 16, extra: attrI("group", 1)}, `unknown attribute "group"`},
		{"act_order_g_idx", nbits{k: 32, n: 4, bits: 4, bs: 16, gIdx: []int64{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}}, "g_idx = 1 at 0 (act-order groups) is not supported"},
		{"g_idx_length", nbits{k: 32, n: 4, bits: 4, bs: 16, gIdx: []int64{0, 1}}, "input g_idx is i32[2], want i32[32]"},
		{"other_contrib_op", nbits{k: 64, n: 8, bits: 4, bs: 16, op: "MatMulBnb4"}, `MatMulBnb4 of domain "com.microsoft" is not supported`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Import("q.onnx", c.m.model(), "", Options{})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("imported; want an error containing %q", c.want)
			}
			msg := err.Error()
			node := `node 0 (` + c.m.op + ` "q_proj")`
			if c.m.op == "" {
				node = `node 0 (MatMulNBits "q_proj")`
			}
			if !strings.Contains(msg, node) || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 0 {
				t.Fatalf("error %q, want one line naming %s and containing %q", msg, node, c.want)
			}
		})
	}
}

// Decode-shaped MatMulNBits models (suite/testdata/exported, scripts/matmulnbits_models.py)
// compile to one GEMV kernel that dequantizes in registers: no bind-time kernel (4-bit zero
// points are unpacked at import, not by a kernel), and a run reads at most 1.2× the ideal
// bytes, for the symmetric 4-bit model the packed weight, its scales, x and y.
func TestMatMulNBitsKernels(t *testing.T) {
	for _, c := range []struct {
		name  string
		ideal int64 // 0: passes' ideal
	}{
		{"matmulnbits4", 128*256/2 + 128*8*4 + 256*4 + 128*4},
		{"matmulnbits4_zp", 0},
		{"matmulnbits8_zp", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("suite", "testdata", "exported", c.name+"_opset13.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Import(c.name+"_opset13.onnx", data, "", Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := passes.Run(m.Graph, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := r.Stats
			ideal := c.ideal
			if ideal == 0 {
				ideal = st.IdealDRAMBytes
			}
			if st.Kernels != 1 || st.BindKernels != 0 || float64(st.DRAMBytes) > 1.2*float64(ideal) {
				t.Errorf("%d kernels, %d bind-time, %d DRAM bytes per run (ideal %d); want 1, 0, ≤ 1.2× ideal:\n%s",
					st.Kernels, st.BindKernels, st.DRAMBytes, ideal, r.Kernels)
			}
		})
	}
}

// 4-bit zero points given at run time are unpacked by integer ops in the graph; the model
// computes what it computes with the same zero points as an initializer (unpacked at import),
// bit for bit, for an odd block count (a row's last byte half padding).
func TestMatMulNBitsRuntimeZero(t *testing.T) {
	const k, n = 80, 6 // 5 blocks of 16: 3 bytes of zero points per row
	a := tensor.New(ir.T(ir.F32, 1, k))
	for i := range a.F {
		a.F[i] = float64(float32(i%9) - 4.5)
	}
	zp := tensor.New(ir.T(ir.U8, n, 3))
	for i := range zp.I {
		zp.I[i] = int64(i*37) % 256 // the initializer's values (nbits.model)
	}
	run := func(input bool) *tensor.Tensor {
		m, err := Import("q.onnx", nbits{k: k, n: n, bits: 4, bs: 16, zShape: []int{n, 3}, zInput: input}.model(), "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		params, err := m.Weights.Map()
		if err != nil {
			t.Fatal(err)
		}
		ins := map[string]*tensor.Tensor{"A": a}
		if input {
			ins["zp"] = zp
		}
		out, err := ref.Run(m.Graph, ins, params)
		if err != nil {
			t.Fatal(err)
		}
		return out["Y"]
	}
	got, want := run(true), run(false)
	for i := range want.F {
		if got.F[i] != want.F[i] {
			t.Fatalf("Y[%d] = %v with run-time zero points, %v with the initializer", i, got.F[i], want.F[i])
		}
	}
}
