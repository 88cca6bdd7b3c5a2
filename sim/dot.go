package sim

import "fmt"

// dot decodes the integer dot products dp4a.atype.btype d, a, b, c (d = c + the four products
// of a's and b's bytes) and dp2a.mode.atype.btype d, a, b, c (d = c + the two products of a's
// 16-bit halves with b's low or high byte pair). Each part is sign- or zero-extended by its
// operand's type; the sum wraps to 32 bits. c and d are .u32 when both types are, else .s32.
func (d *decoder) dot(name string) error {
	in, o, args := d.in, d.o, d.pi.Args
	ts := o.types()
	if len(ts) != 2 || d.nargs(4) != nil {
		return fmt.Errorf("bad form")
	}
	for _, t := range ts {
		if t != tU32 && t != tS32 {
			return fmt.Errorf("bad form")
		}
	}
	sa, sb := ts[0] == tS32, ts[1] == tS32
	ct := tS32
	if !sa && !sb {
		ct = tU32
	}
	lanes, width, first := 4, uint(8), uint(0)
	if name == "dp2a" {
		lanes, width = 2, 16
		switch o.oneOf("lo", "hi") {
		case "":
			return fmt.Errorf("needs .lo or .hi")
		case "hi":
			first = 2
		}
	}
	in.op, in.t = opALU, ct
	in.fn = func(_ *inst, a, b, c, _ uint64) uint64 {
		acc := uint32(c)
		for i := range uint(lanes) {
			acc += uint32(part(a, i*width, width, sa) * part(b, (first+i)*8, 8, sb))
		}
		return uint64(acc)
	}
	var err error
	if in.d[0], err = d.dstT(args[0], ct); err != nil {
		return err
	}
	for i, t := range []ptype{ts[0], ts[1], ct} {
		if in.s[i], err = d.src(args[i+1], t); err != nil {
			return err
		}
	}
	in.n = 3
	return nil
}

// part is the width-bit field of x at bit pos, sign-extended if signed.
func part(x uint64, pos, width uint, signed bool) int64 {
	v := int64(x>>pos) & (1<<width - 1)
	if signed && v>>(width-1) != 0 {
		v -= 1 << width
	}
	return v
}
