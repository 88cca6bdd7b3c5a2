package frontend_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// WithQuantizedParams: a picked parameter becomes its integers, scales and zero points of the
// layout docs/ops.md gives the dequantize op, and what Param returns is their dequantize of the
// float parameter's type; unpicked parameters stay as they were; a rule the op cannot hold is one
// error naming the parameter.
func TestWithQuantizedParams(t *testing.T) {
	for _, c := range []struct {
		name string
		q    *frontend.Quant
		want string // the parameters' types by name, or the error
	}{
		{"float", nil, "b:f32[6] w:f32[6,8]"},
		{"int8 per channel", &frontend.Quant{Bits: 8, Group: 8, Axis: 1}, "b:f32[6] w_q:u8[6,8] w_scale:f32[6,1] w_zero:u8[6,1]"},
		{"int4 group 4", &frontend.Quant{Bits: 4, Group: 4, Axis: 1}, "b:f32[6] w_q:u8[6,4] w_scale:f32[6,2] w_zero:u8[6,2]"},
		{"int4 along axis 0", &frontend.Quant{Bits: 4, Group: 3, Axis: 0}, "b:f32[6] w_q:u8[3,8] w_scale:f32[2,8] w_zero:u8[2,8]"},
		{"group does not divide", &frontend.Quant{Bits: 8, Group: 3, Axis: 1}, "parameter w f32[6,8]: cannot store it quantized as 8 bits in groups of 3 along axis 1"},
		{"3 bits", &frontend.Quant{Bits: 3, Group: 8, Axis: 1}, "cannot store it quantized as 3 bits"},
		{"axis out of range", &frontend.Quant{Bits: 8, Group: 8, Axis: 2}, "along axis 2"},
		{"zero group", &frontend.Quant{Bits: 8, Group: 0, Axis: 1}, "in groups of 0"},
	} {
		rule := func(name string, _ ir.Type) *frontend.Quant {
			if name == "w" {
				return c.q
			}
			return nil
		}
		g, err := frontend.Build("m", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 2, 8)
			w := b.Param("w", ir.T(ir.F32, 6, 8), frontend.DefaultUniform(8))
			b.Output("y", frontend.Linear(x, w, b.Param("b", ir.T(ir.F32, 6), frontend.Zeros())))
		}, frontend.WithQuantizedParams(rule))
		var got string
		if err != nil {
			got = err.Error()
		} else {
			var ps []string
			for _, p := range g.Params() {
				ps = append(ps, p.Name+":"+p.Type.String())
			}
			slices.Sort(ps)
			got = strings.Join(ps, " ")
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
