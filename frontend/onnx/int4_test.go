package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// int4Tensor is a 4-bit initializer holding v (int4: [−8, 7], uint4: [0, 15]) packed as ONNX 1.16
// packs them: element 2i in byte i's 4 low bits, 2i+1 in its 4 high bits, two's complement.
func int4Tensor(name string, signed bool, shape []int, v []int64) *onnxpb.TensorProto {
	dt := int32(onnxUint4)
	if signed {
		dt = onnxInt4
	}
	raw := make([]byte, (len(v)+1)/2)
	for i, x := range v {
		raw[i/2] |= byte(x&15) << (4 * (i % 2))
	}
	dims := make([]int64, len(shape))
	for i, d := range shape {
		dims[i] = int64(d)
	}
	return &onnxpb.TensorProto{Name: ptr(name), Dims: dims, DataType: &dt, RawData: raw}
}

// int4Case is y = x·DequantizeLinear(W) (+ b): W int4 or uint4, [K, N] for MatMul or [N, K] for
// Gemm with transB, scales in blocks of bs along K (opset 21) or, bs 0, per output channel.
type int4Case struct {
	signed, zero, gemm, alsoOutput bool
	k, n, bs                       int
}

func (c int4Case) String() string {
	return fmt.Sprintf("signed%v_zero%v_gemm%v_output%v_k%d_n%d_bs%d", c.signed, c.zero, c.gemm, c.alsoOutput, c.k, c.n, c.bs)
}

// model builds c's model and returns it with W's values, its scales and zero points as ONNX
// holds them (shape [K/bs, N] or [N, K/bs] blocked, [N] per axis).
func (c int4Case) model(seed uint64) (data []byte, w []int64, scale []float64, zero []int64, sshape []int) {
	r := rand.New(rand.NewPCG(seed, 21))
	lo, hi := 0, 16
	if c.signed {
		lo, hi = -8, 8
	}
	ws, ax := []int{c.k, c.n}, int64(0) // blocked along K
	blocks := 0
	if c.bs > 0 {
		blocks = (c.k + c.bs - 1) / c.bs
		sshape = []int{blocks, c.n}
		if c.gemm {
			ws, ax, sshape = []int{c.n, c.k}, 1, []int{c.n, blocks}
		}
	} else {
		ax, sshape = 1, []int{c.n} // per output channel: N is axis 1 of [K, N], 0 of [N, K]
		if c.gemm {
			ws, ax = []int{c.n, c.k}, 0
		}
	}
	w = make([]int64, c.k*c.n)
	for i := range w {
		w[i] = int64(lo + r.IntN(hi-lo))
	}
	ns := 1
	for _, d := range sshape {
		ns *= d
	}
	scale, zero = make([]float64, ns), make([]int64, ns)
	for i := range scale {
		scale[i] = float64(float32(0.01 + r.Float64()/10))
		if c.zero {
			zero[i] = int64(lo + r.IntN(hi-lo))
		}
	}
	b := make([]float64, c.n)
	for i := range b {
		b[i] = r.Float64() - 0.5
	}
	inits := []*onnxpb.TensorProto{int4Tensor("W", c.signed, ws, w), floats("scale", sshape, scale...), floats("b", []int{c.n}, b...)}
	dqIn := []string{"W", "scale"}
	if c.zero {
		inits = append(inits, int4Tensor("zp", c.signed, sshape, zero))
		dqIn = append(dqIn, "zp")
	}
	attrs := []*onnxpb.AttributeProto{attrI("axis", ax)}
	if c.bs > 0 {
		attrs = append(attrs, attrI("block_size", int64(c.bs)))
	}
	nodes := []*onnxpb.NodeProto{nodeP("DequantizeLinear", "dq", dqIn, []string{"Wf"}, attrs...)}
	if c.gemm {
		nodes = append(nodes, nodeP("Gemm", "fc", []string{"x", "Wf", "b"}, []string{"y"}, attrI("transB", 1)))
	} else {
		nodes = append(nodes, nodeP("MatMul", "mm", []string{"x", "Wf"}, []string{"xw"}), nodeP("Add", "add", []string{"xw", "b"}, []string{"y"}))
	}
	outs := []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 1, c.n)}
	if c.alsoOutput {
		outs = append(outs, valueInfo("Wf", onnxFloat, ws[0], ws[1]))
	}
	return model(21, &onnxpb.GraphProto{Name: ptr("int4"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, c.k)},
		Initializer: inits, Node: nodes, Output: outs}), w, scale, zero, sshape
}

// A DequantizeLinear of an int4 or uint4 initializer (opset 21) feeding MatMul or Gemm becomes
// the dequantize op at 4 bits, per axis or in blocks, and the model computes the spec's
// y = (x − zero)·scale, evaluated here in float64 from the values the test packed; where the
// decomposition applies (the weight also an output, blocks that do not divide K) it computes the
// same.
func TestDequantizeLinearInt4(t *testing.T) {
	for _, c := range []int4Case{
		{signed: false, zero: true, k: 64, n: 24, bs: 16},
		{signed: true, zero: false, k: 64, n: 24, bs: 32},
		{signed: true, zero: true, k: 64, n: 24, bs: 16},
		{signed: false, zero: false, k: 64, n: 24, bs: 16}, // uint4's default zero point is 0, not the op's 8
		{signed: true, zero: true, k: 64, n: 24},           // per axis
		{signed: false, zero: false, k: 64, n: 24},
		{signed: true, zero: true, gemm: true, k: 64, n: 24, bs: 16},
		{signed: false, zero: true, gemm: true, k: 64, n: 24},
		{signed: true, zero: true, alsoOutput: true, k: 64, n: 24, bs: 16}, // the decomposition
		{signed: false, zero: true, k: 40, n: 8, bs: 16},                   // a partial last block: the decomposition
		{signed: true, zero: false, k: 2, n: 1, bs: 2},
		{signed: false, zero: true, k: 32, n: 7, bs: 32}, // an odd count of values: the last byte half used
		{signed: true, zero: true, k: 0, n: 4, bs: 16},   // zero-size K
		{signed: false, zero: true, k: 16, n: 0, bs: 16}, // zero-size N
	} {
		t.Run(c.String(), func(t *testing.T) {
			data, w, scale, zero, sshape := c.model(uint64(c.k + c.n + c.bs))
			m, err := Import("q.onnx", data, "", Options{})
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph.String()
			wantOp := !c.alsoOutput && (c.bs == 0 || c.k%c.bs == 0)
			if has := strings.Contains(g, "dequantize(") && strings.Contains(g, "bits=4"); has != wantOp {
				t.Fatalf("4-bit dequantize op: %v, want %v:\n%s", has, wantOp, g)
			}
			params, x := weightsAndInput(t, m, c.k)
			out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": x}, params)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for j := range c.n {
				sum := 0.0
				for i := range c.k {
					at, kk, jj := i*c.n+j, i, j // W[K, N]: blocks along axis 0
					if c.gemm {
						at = j*c.k + i
					}
					s := j // the scale's index
					if c.bs > 0 {
						s = kk/c.bs*sshape[len(sshape)-1] + jj
						if c.gemm {
							s = jj*sshape[1] + kk/c.bs
						}
					}
					sum += x.F[i] * float64(float32(float64(w[at]-zero[s])*scale[s]))
				}
				want := sum + params["b"].F[j]
				worst = max(worst, math.Abs(out["y"].F[j]-want)/max(1, math.Abs(want)))
			}
			if worst > 1e-5 {
				t.Errorf("y differs from the spec's by %.3g", worst)
			}
		})
	}
}

// weightsAndInput is m's weights and an input x f32[1,k] of small exact values.
func weightsAndInput(t *testing.T, m *Model, k int) (map[string]*tensor.Tensor, *tensor.Tensor) {
	t.Helper()
	params, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.New(ir.T(ir.F32, 1, k))
	for i := range x.F {
		x.F[i] = float64(float32(float64(i%7) - 3.25))
	}
	return params, x
}

// The size: x f32[1,4096]·DequantizeLinear(W int4[4096,4096], blocks of 128 along K)
// reads at most 1.2× the int4 weight, its scales and zero points per run; no bind-time kernel.
func TestDequantizeLinearInt4Bytes(t *testing.T) {
	c := int4Case{signed: true, zero: true, k: 4096, n: 4096, bs: 128}
	data, _, _, _, _ := c.model(1)
	m, err := Import("q.onnx", data, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := passes.Run(m.Graph, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ideal := float64(c.k*c.n/2 + c.k/c.bs*c.n*(4+1))
	st := r.Stats
	t.Logf("%d kernels, %d DRAM bytes per run: %.3f× the int4 weight, scales and zero points", st.Kernels, st.DRAMBytes, float64(st.DRAMBytes)/ideal)
	if st.BindKernels != 0 || float64(st.DRAMBytes) > 1.2*ideal {
		t.Errorf("%d DRAM bytes per run (%.2f× the int4 weight, scales and zero points), %d bind-time kernels; want ≤ 1.2× and none",
			st.DRAMBytes, float64(st.DRAMBytes)/ideal, st.BindKernels)
	}
}

// Bad 4-bit input: one error each, naming the problem, and nothing allocated from the dims
// before the bytes are checked (the 2^28-element initializer would take gigabytes).
func TestInt4Errors(t *testing.T) {
	dq := func(opset int64, inits []*onnxpb.TensorProto, in []string, attrs ...*onnxpb.AttributeProto) []byte {
		return model(opset, &onnxpb.GraphProto{Name: ptr("m"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, 4)},
			Initializer: inits, Node: []*onnxpb.NodeProto{nodeP("DequantizeLinear", "dq", in, []string{"Wf"}, attrs...),
				nodeP("MatMul", "mm", []string{"x", "Wf"}, []string{"y"})},
			Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 1, 4)}})
	}
	short := int4Tensor("W", true, []int{4, 4}, make([]int64, 16))
	short.RawData = short.RawData[:7]
	huge := int4Tensor("W", false, []int{1 << 14, 1 << 14}, nil)
	huge.RawData = make([]byte, 10)
	typed := int4Tensor("W", false, []int{4, 4}, make([]int64, 16))
	typed.RawData, typed.Int32Data = nil, []int32{1, 2, 3, 4, 5, 6, 7, 300}
	scale := floats("s", []int{1, 4}, 1, 1, 1, 1)
	zp8 := encodeTensor("zp", tensor.New(ir.T(ir.I8, 1, 4)))
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"raw_data short", dq(21, []*onnxpb.TensorProto{short, scale}, []string{"W", "s"}, attrI("axis", 0), attrI("block_size", 4)),
			`initializer "W": int4[4,4] needs 8 bytes of raw_data, has 7`},
		{"raw_data short of huge dims", dq(21, []*onnxpb.TensorProto{huge, scale}, []string{"W", "s"}),
			`initializer "W": uint4[16384,16384] needs 134217728 bytes of raw_data, has 10`},
		{"int32_data not bytes", dq(21, []*onnxpb.TensorProto{typed, scale}, []string{"W", "s"}),
			"int32_data element 7 is 300, not a byte of two 4-bit values"},
		{"blocked scale of the wrong shape", dq(21, []*onnxpb.TensorProto{int4Tensor("W", true, []int{4, 4}, make([]int64, 16)), scale}, []string{"W", "s"}, attrI("axis", 0), attrI("block_size", 2)),
			"blocked quantization of int4[4,4] in blocks of 2 along axis 0 wants scales and zero points of shape [2,4], not f32[1,4]"},
		{"int8 zero point of int4", dq(21, []*onnxpb.TensorProto{int4Tensor("W", true, []int{4, 4}, make([]int64, 16)), scale, zp8}, []string{"W", "s", "zp"}, attrI("axis", 0), attrI("block_size", 4)),
			"the zero point (i8) and x (int4) differ in element type"},
		{"block_size before opset 21", dq(19, []*onnxpb.TensorProto{int4Tensor("W", true, []int{4, 4}, make([]int64, 16)), scale}, []string{"W", "s"}, attrI("axis", 0), attrI("block_size", 4)),
			`attribute "block_size" is not an attribute of DequantizeLinear at opset 19`},
		{"quantizing to int4", model(21, &onnxpb.GraphProto{Name: ptr("m"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, 4)},
			Initializer: []*onnxpb.TensorProto{floats("s", nil, 1), int4Tensor("zp", true, nil, []int64{0})},
			Node:        []*onnxpb.NodeProto{nodeP("QuantizeLinear", "q", []string{"x", "s", "zp"}, []string{"y"})},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("y", onnxInt8, 1, 4)}}),
			"quantizing to int4 is not supported"},
		{"int4 constant", model(21, &onnxpb.GraphProto{Name: ptr("m"),
			Node: []*onnxpb.NodeProto{nodeP("Constant", "c", nil, []string{"y"},
				&onnxpb.AttributeProto{Name: ptr("value"), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: int4Tensor("v", true, []int{2}, []int64{1, -1})})},
			Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxInt8, 2)}}),
			"element type INT4 is not supported"},
	} {
		_, err := Import("m.onnx", c.data, "", Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// The 4-bit dequantize op's layouts run on the simulator as the reference computes them: blocks
// along K of a MatMul's B [K, N] (packed along axis 0), per channel of a Gemm's transposed B [N, K]
// (packed along axis 1), and uint4 with its explicit zeros; each product is one kernel, the GEMV
// reading the packed bytes (K·N at least gemv.MinWeight).
func TestDequantizeLinearInt4Simulator(t *testing.T) {
	for _, c := range []int4Case{
		{signed: true, zero: true, k: 128, n: 48, bs: 16},
		{signed: false, zero: false, k: 128, n: 48, bs: 32},
		{signed: false, zero: true, gemm: true, k: 128, n: 48},
	} {
		t.Run(c.String(), func(t *testing.T) {
			data, _, _, _, _ := c.model(3)
			m, err := Import("q.onnx", data, "", Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(m.Graph, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if k := res.Passes.Stats.Kernels; k != 1 {
				t.Errorf("%d kernels, want 1:\n%s", k, res.Passes.Kernels)
			}
			params, x := weightsAndInput(t, m, c.k)
			rep, err := check.Run(res.Artifact, map[string]*tensor.Tensor{"x": x}, params)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Outputs) != 1 || !rep.Pass() {
				for _, o := range rep.Outputs {
					t.Errorf("%s: %d bad, first %s", o.Name, o.Bad, o.First)
				}
			}
		})
	}
}

// A 4-bit initializer in external data: ⌈n/2⌉ bytes, checked against the file and the length key
// before anything is read, then unpacked as raw_data is.
func TestInt4External(t *testing.T) {
	dir := t.TempDir()
	v := []int64{-8, 7, 0, -1, 3, -4, 5}
	packed := int4Tensor("W", true, []int{7}, v).RawData
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), packed, 0o644); err != nil {
		t.Fatal(err)
	}
	ext := func(kv ...string) []byte {
		w := &onnxpb.TensorProto{Name: ptr("W"), Dims: []int64{7}, DataType: ptr(int32(onnxInt4)), DataLocation: onnxpb.TensorProto_EXTERNAL.Enum()}
		for i := 0; i < len(kv); i += 2 {
			w.ExternalData = append(w.ExternalData, &onnxpb.StringStringEntryProto{Key: ptr(kv[i]), Value: ptr(kv[i+1])})
		}
		return model(21, &onnxpb.GraphProto{Name: ptr("m"), Initializer: []*onnxpb.TensorProto{w, floats("s", nil, 0.5)},
			Node:   []*onnxpb.NodeProto{nodeP("DequantizeLinear", "dq", []string{"W", "s"}, []string{"y"})},
			Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 7)}})
	}
	m, err := Import("m.onnx", ext("location", "w.bin", "length", "4"), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	params, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ref.Run(m.Graph, nil, params)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(out["y"].F), "[-4 3.5 0 -0.5 1.5 -2 2.5]"; got != want {
		t.Errorf("y = %s, want %s", got, want)
	}
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"location", "w.bin", "length", "7"}, `external data "w.bin": length 7, but the tensor needs 4 bytes`},
		{[]string{"location", "w.bin", "offset", "1"}, `external data "w.bin": 4 bytes at offset 1 are past the file's end (4 bytes)`},
	} {
		if _, err := Import("m.onnx", ext(c.kv...), dir, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.kv, err, c.want)
		}
	}
}
