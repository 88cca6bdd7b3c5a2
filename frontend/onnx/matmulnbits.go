package onnx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// MatMulNBits (onnxruntime's com.microsoft contrib op): Y = A·dequant(B)ᵀ + bias, B an [N, K]
// weight quantized along K in blocks of block_size, stored as uint8 [N, n_blocks, blob_size]
// with blob_size = block_size·bits/8 and the codes packed low bits first along K (for 4 bits
// element 2i is byte i's low nibble, 2i+1 its high nibble: docs/ops.md's bits 4 layout).
// scales are [N, n_blocks] (or flat [N·n_blocks]); zero_points are uint8 packed the same way
// along the blocks, [N, ceil(n_blocks·bits/8)] (or flat), and default to 2^(bits-1). The weight
// becomes gcomp's dequantize op read by a dot_general as its rhs, so a decode-shaped product
// streams the packed bytes through the GEMV kernel (docs/fusion.md, "Quantized weights").

func init() {
	contribConverters["MatMulNBits"] = convMatMulNBits
}

// contribConverters are the ops of the com.microsoft domain that import supports.
var contribConverters = map[string]converter{}

// contribDomain is onnxruntime's contrib-op domain.
const contribDomain = "com.microsoft"

var matMulNBitsAttrs = map[string]bool{"K": true, "N": true, "bits": true, "block_size": true, "accuracy_level": true}

func convMatMulNBits(n *node) ([]*val, error) {
	if err := n.inputs(3, 6); err != nil {
		return nil, err
	}
	for name := range n.attrs {
		if !matMulNBitsAttrs[name] {
			return nil, fmt.Errorf("unknown attribute %q (MatMulNBits has K, N, bits, block_size, accuracy_level)", name)
		}
	}
	for _, name := range []string{"K", "N", "block_size"} {
		if !n.has(name) {
			return nil, fmt.Errorf("attribute %s is required", name)
		}
	}
	k, nOut, bits, bs := n.attrInt("K", 0), n.attrInt("N", 0), n.attrInt("bits", 4), n.attrInt("block_size", 0)
	if bits != 4 && bits != 8 {
		return nil, unsupportedf("attribute bits = %d is not supported (supported: 4, 8)", bits)
	}
	if k < 1 || nOut < 1 {
		return nil, fmt.Errorf("attributes K = %d and N = %d must be positive", k, nOut)
	}
	if bs < 16 || bs&(bs-1) != 0 {
		return nil, fmt.Errorf("attribute block_size = %d is not a power of two ≥ 16", bs)
	}
	if k%bs != 0 {
		return nil, unsupportedf("K = %d not a multiple of block_size = %d is not supported", k, bs)
	}
	blocks, blob := k/bs, bs*bits/8
	a, b, scales := n.in[0], n.in[1], n.in[2]
	if !a.t.DType.IsFloat() || a.t.DType == ir.F64 || len(a.t.Shape) < 1 || a.t.Shape[len(a.t.Shape)-1] != k {
		return nil, fmt.Errorf("input A is %s, want f32, f16 or bf16 with last dim K = %d", a.t, k)
	}
	if want := (ir.Shape{nOut, blocks, blob}); b.t.DType != ir.U8 || !b.t.Shape.Equal(want) {
		return nil, fmt.Errorf("input B is %s, want u8%v (N, K/block_size, block_size·bits/8)", b.t, want)
	}
	grid := ir.Shape{nOut, blocks}
	if scales.t.DType != a.t.DType || !scales.t.Shape.Equal(grid) && !scales.t.Shape.Equal(ir.Shape{nOut * blocks}) {
		return nil, fmt.Errorf("input scales is %s, want %s%v or [%d]", scales.t, a.t.DType, grid, nOut*blocks)
	}
	if g := n.arg(4); g != nil {
		if err := n.trivialGIdx(g, k, bs); err != nil {
			return nil, err
		}
	}
	args := []*val{n.reshape(b, ir.Shape{nOut, k * bits / 8}), n.reshape(scales, grid)}
	zp := n.arg(3)
	switch {
	case zp != nil:
		z, err := n.nbitsZero(zp, nOut, blocks, bits)
		if err != nil {
			return nil, err
		}
		args = append(args, z)
	case bits == 8: // dequantize's 8-bit default zero is 0; MatMulNBits' is 128
		args = append(args, n.splatOf(ir.T(ir.U8, nOut, blocks), 128))
	}
	w, err := n.op("dequantize", ir.Attrs{"bits": bits, "group": bs, "axis": 1}, args...)
	if err != nil {
		return nil, err
	}
	rows := a.t.Shape.NumElements() / k
	if k == 0 {
		rows = 0
	}
	a2 := n.reshape(a, ir.Shape{rows, k})
	y, err := n.op("dot_general", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}, a2, w)
	if err != nil {
		return nil, err
	}
	if bias := n.arg(5); bias != nil {
		if bias.t.DType != a.t.DType || !bias.t.Shape.Equal(ir.Shape{nOut}) {
			return nil, fmt.Errorf("input bias is %s, want %s[%d]", bias.t, a.t.DType, nOut)
		}
		bb, err := n.op("broadcast_in_dim", ir.Attrs{"shape": []int{rows, nOut}, "dims": []int{1}}, bias)
		if err != nil {
			return nil, err
		}
		y = n.bin("add", y, bb)
	}
	out := append(a.t.Shape[:len(a.t.Shape)-1].Clone(), nOut)
	return []*val{n.reshape(y, out)}, nil
}

// trivialGIdx accepts a g_idx (the group of each of the K input channels) only if it is the
// default k/block_size, the only order the dequantize op's contiguous groups express.
func (n *node) trivialGIdx(g *val, k, bs int) error {
	if g.t.DType != ir.I32 || !g.t.Shape.Equal(ir.Shape{k}) {
		return fmt.Errorf("input g_idx is %s, want i32[%d]", g.t, k)
	}
	c, err := n.known(4, "g_idx")
	if err != nil {
		return err
	}
	for i := 0; i < k; i++ {
		if c.I[i] != int64(i/bs) {
			return unsupportedf("input g_idx = %d at %d (act-order groups) is not supported (supported: g_idx[k] = k/block_size)", c.I[i], i)
		}
	}
	return nil
}

// nbitsZero unpacks MatMulNBits' zero points to the dequantize op's u8 [N, n_blocks], one per
// byte. 8-bit zero points are already that; 4-bit ones hold two blocks per byte, low nibble
// first, each row padded to whole bytes: unpacked at import for an initializer, else by
// integer ops in the graph.
func (n *node) nbitsZero(zp *val, nOut, blocks, bits int) (*val, error) {
	if zp.t.DType.IsFloat() {
		return nil, unsupportedf("input zero_points of %s is not supported (supported: packed uint8)", zp.t.DType)
	}
	per := (blocks*bits + 7) / 8
	if zp.t.DType != ir.U8 || !zp.t.Shape.Equal(ir.Shape{nOut, per}) && !zp.t.Shape.Equal(ir.Shape{nOut * per}) {
		return nil, fmt.Errorf("input zero_points is %s, want u8[%d, %d] or u8[%d]", zp.t, nOut, per, nOut*per)
	}
	z := n.reshape(zp, ir.Shape{nOut, per})
	if bits == 8 {
		return z, nil
	}
	if zp.param != "" {
		// an initializer: unpacked now into one of its own, a buffer the GEMV kernel reads
		// (computed in the graph, it would keep the dequantize out of the product's kernel)
		c, err := n.constValue(zp)
		if err != nil {
			return nil, err
		}
		u := tensor.New(ir.T(ir.U8, nOut, blocks))
		for i := range nOut {
			for j := range blocks {
				u.I[i*blocks+j] = c.I[i*per+j/2] >> (4 * (j % 2)) & 15
			}
		}
		return &val{t: u.Type, w: &weight{t: u.Type, c: u}, param: n.paramName(zp.param + "_unpacked")}, nil
	}
	zi := n.cast(z, ir.I32)
	hi := n.bin("div", zi, n.splat(zi, 16))
	lo := n.bin("sub", zi, n.bin("mul", hi, n.splat(zi, 16)))
	pair := ir.Shape{nOut, per, 1}
	both, err := n.op("concat", ir.Attrs{"axis": 2}, n.reshape(lo, pair), n.reshape(hi, pair))
	if err != nil {
		return nil, err
	}
	u := n.reshape(both, ir.Shape{nOut, 2 * per})
	if 2*per != blocks {
		u = n.sliceAxis(u, 1, 0, blocks, 1)
	}
	return n.cast(u, ir.U8), nil
}
