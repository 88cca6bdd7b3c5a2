package onnx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

func init() { converters["BitShift"] = convBitShift }

// convBitShift shifts uint8 values (the only unsigned type gcomp has) in i32 arithmetic:
// x << y is x·2^y modulo 256, x >> y is x / 2^y (integer division), and a shift by 8 or more
// is 0, as in C on the 8-bit value. 2^y comes from a select per shift count.
func convBitShift(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	dir, err := n.attrChoice("direction", "", "LEFT", "RIGHT")
	if err != nil {
		return nil, err
	}
	xs, err := n.broadcastAll(n.in[0], n.in[1])
	if err != nil {
		return nil, err
	}
	if xs[0].t.DType != xs[1].t.DType {
		return nil, fmt.Errorf("BitShift of %s by %s", xs[0].t.DType, xs[1].t.DType)
	}
	if xs[0].t.DType != ir.U8 {
		return nil, unsupportedf("BitShift of %s is not supported (supported: uint8)", xs[0].t.DType)
	}
	const bits = 8
	x, y := n.cast(xs[0], ir.I32), n.cast(xs[1], ir.I32)
	p := n.splatOf(y.t, 1)
	for k := 1; k < bits; k++ {
		p = must(n.selectOp(n.bin("eq", y, n.splat(y, float64(k))), n.splatOf(y.t, float64(int(1)<<k)), p))
	}
	var r *val
	if dir == "LEFT" {
		prod := n.bin("mul", x, p)
		r = n.bin("sub", prod, n.bin("mul", n.bin("div", prod, n.splat(prod, 1<<bits)), n.splat(prod, 1<<bits)))
	} else {
		r = n.bin("div", x, p)
	}
	r = must(n.selectOp(n.bin("ge", y, n.splat(y, bits)), n.splatOf(r.t, 0), r))
	return []*val{n.cast(r, ir.U8)}, nil
}
