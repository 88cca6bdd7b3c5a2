package onnx

import "slices"

// Opsets 18 to 21 (ONNX 1.13 to 1.16). attrschema.go is generated from ONNX 1.12 (opset 17);
// the ops whose definitions changed after it are listed here from ONNX's changelog, with what
// import does at the model's opset. Changes that only add element types (float8 at 19, int4 at
// 21: Cast, Constant, Identity, Reshape, Shape, Size, Flatten, Squeeze, Unsqueeze, Transpose,
// Pad, ConstantOfShape, IsInf, IsNaN, QLinearMatMul, ...) need nothing: gcomp has no float8
// dtype, so such tensors are refused where they appear (dtypeOf), and 4-bit tensors are read
// only as initializers. New ops (Col2Im, CenterCropPad, the Bitwise ops, Mish,
// GroupNormalization, Gelu, AffineGrid, the string ops, ImageDecoder) have no converter and are
// refused as every unknown op is; so are ops refused before (DFT, GridSample, LpPool, the
// Optional ops, If, Loop, Scan).

// laterChange is one op's change after opset 17 that the converters do not implement: the new
// attributes, refused by name when a node sets them.
type laterChange struct {
	op    string
	since int
	attrs []string
}

var laterChanges = []laterChange{
	{"Resize", 18, []string{"antialias", "axes", "keep_aspect_ratio_policy"}}, // 19's half_pixel_symmetric: refused by the mode list
	{"Split", 18, []string{"num_outputs"}},                                    // uneven splits come only with num_outputs
	{"AveragePool", 19, []string{"dilations"}},
	{"Cast", 19, []string{"saturate"}}, // float8 only
	{"CastLike", 19, []string{"saturate"}},
	{"QuantizeLinear", 19, []string{"saturate"}},
	{"QuantizeLinear", 21, []string{"block_size", "output_dtype"}},
	// Handled: Pad's axes input (18; 19's "wrap" mode is refused by the mode list), the
	// scatters' reductions max and min (18: refused by the reduction list), the reductions'
	// axes from their second input (18), DequantizeLinear's blocks and 4-bit inputs (21).
}

// laterSchemas are the schema versions after opset 17 of the ops import implements at them.
var laterSchemas = map[string][]attrSchema{
	"DequantizeLinear": {{21, "axis:INT block_size:INT"}},
}

// reductionsAt18 are the reductions whose axes became their second input at opset 18 (ReduceSum's
// did at 13).
var reductionsAt18 = []string{"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare"}

func init() {
	for _, op := range reductionsAt18 {
		laterSchemas[op] = []attrSchema{{18, "keepdims:INT noop_with_empty_axes:INT"}}
	}
	for op, s := range laterSchemas {
		attrSchemas[op] = append(attrSchemas[op], s...)
	}
}

// checkLater refuses a node of the model's opset that sets an attribute its op gained after
// opset 17 and import does not implement.
func checkLater(op string, opset int, set func(string) bool) error {
	for _, c := range laterChanges {
		if c.op != op || opset < c.since {
			continue
		}
		if i := slices.IndexFunc(c.attrs, set); i >= 0 {
			return unsupportedf("%s's attribute %s (opset %d) is not supported", op, c.attrs[i], c.since)
		}
	}
	return nil
}

// axesFromInput reports whether the reduction op takes its axes from its second input at opset.
func axesFromInput(op string, opset int) bool {
	return op == "ReduceSum" && opset >= 13 || opset >= 18 && slices.Contains(reductionsAt18, op)
}
