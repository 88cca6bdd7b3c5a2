package sim

import "fmt"

// mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32 (sm_89+, PTX ISA 8.4): A is
// 16×32 in four .b32 registers of four bytes each, B 32×8 in two, C and D 16×8 f32 as in the
// 16-bit shapes. The fragment layout is the 8-bit one of the PTX ISA ("mma.m16n8k32"): A's
// element i (byte i%4 of register i/4) is at row g + 8·(i/4 % 2), column 4q + i%4 + 16·(i/8);
// B's at row 4q + i%4 + 16·(i/4), column g (g = lane/4, q = lane%4).
//
// Products of fp8 values are exact in float64 and summed there with C, then rounded once to f32.
// The ISA leaves the accumulation's internal precision to the implementation (Hopper's is
// narrower than f32), so on a GPU a result may differ in its last bits; the simulator's is the
// exact sum rounded once.

// mmaFP8 decodes the fp8 shape; the shape qualifier is already consumed.
func (d *decoder) mmaFP8() error {
	in, o, args := d.in, d.o, d.pi.Args
	var f8 []ptype
	for i, p := range o.parts {
		switch p {
		case "e4m3":
			f8 = append(f8, tE4M3)
			o.used[i] = true
		case "e5m2":
			f8 = append(f8, tE5M2)
			o.used[i] = true
		}
	}
	ts := o.types()
	if len(f8) != 2 || len(ts) != 2 || ts[0] != tF32 || ts[1] != tF32 {
		return fmt.Errorf("m16n8k32 takes .f32.{e4m3,e5m2}.{e4m3,e5m2}.f32")
	}
	in.flag, in.t, in.t2, in.t3 = mmaM16N8K32, tF32, f8[0], f8[1]
	if err := d.nargs(4); err != nil {
		return err
	}
	var all []opnd
	for i, spec := range []struct {
		n   int
		dst bool
	}{{4, true}, {4, false}, {2, false}, {4, false}} {
		ops, err := d.regList(args[i], spec.n, spec.dst, tB32)
		if err != nil {
			return err
		}
		all = append(all, ops...)
	}
	in.more = all
	in.n = 4<<4 | 2
	return nil
}

// fp8Value is the value of the fp8 byte b of format t (tE4M3 or tE5M2).
func fp8Value(t ptype, b uint64) float64 {
	if t == tE5M2 {
		return f16(e5m2ToF16(b))
	}
	return f16(e4m3ToF16(b))
}

func (w *warp) mmaFP8(in *inst) {
	dregs, aregs, bregs, cregs := in.more[:4], in.more[4:8], in.more[8:10], in.more[10:14]
	var A [16][32]float64
	var B [32][8]float64
	var C [16][8]float64
	for lane := 0; lane < 32; lane++ {
		g, q := lane/4, lane%4
		for i := 0; i < 16; i++ {
			b := w.val(&aregs[i/4], lane) >> (8 * (i % 4)) & 0xFF
			A[g+8*(i/4%2)][4*q+i%4+16*(i/8)] = fp8Value(in.t2, b)
		}
		for i := 0; i < 8; i++ {
			b := w.val(&bregs[i/4], lane) >> (8 * (i % 4)) & 0xFF
			B[4*q+i%4+16*(i/4)][g] = fp8Value(in.t3, b)
		}
		for i := 0; i < 4; i++ {
			r, c := fragC(lane, i)
			C[r][c] = f32(w.val(&cregs[i], lane))
		}
	}
	rnd := inst{rnd: rn}
	for lane := 0; lane < 32; lane++ {
		for i := 0; i < 4; i++ {
			r, c := fragC(lane, i)
			s := C[r][c]
			for j := 0; j < 32; j++ {
				s += A[r][j] * B[j][c]
			}
			w.set(&dregs[i], lane, fout(&rnd, tF32, s))
		}
	}
}
