package sim

import (
	"math/bits"
)

const fullWarp = 0xFFFFFFFF

// ldmatrix loads n 8x8 matrices of 16-bit elements: lanes 8i..8i+7 give the
// row addresses of matrix i; lane t receives row t/4, columns 2(t%4) and
// 2(t%4)+1 of each matrix (with .trans, the same elements of the transpose).
func (w *warp) ldmatrix(in *inst, exec uint32) error {
	n := int(in.n)
	var rows [4][8][]byte
	var offs [32]uint64
	for i := 0; i < n; i++ {
		for r := 0; r < 8; r++ {
			l := 8*i + r
			addr := w.addrOf(in, l)
			mem, err := w.access(in, in.space, addr, 16, l, accRead)
			if err != nil {
				return err
			}
			rows[i][r] = mem
			offs[l] = resolvedOffset(addr)
		}
	}
	for i := 0; i < n; i++ {
		for t := 0; t < 32; t++ {
			var v uint64
			for j := 0; j < 2; j++ {
				r, c := t/4, 2*(t%4)+j
				if in.flag == 1 {
					r, c = c, r
				}
				e := rows[i][r][2*c : 2*c+2]
				v |= uint64(e[0])<<(16*j) | uint64(e[1])<<(16*j+8)
			}
			w.set(&in.d[i], t, v)
		}
	}
	// Each matrix is one 128-byte phase of 8 row reads.
	s := &w.b.stats
	for i := 0; i < n; i++ {
		var o [32]uint64
		for r := 0; r < 8; r++ {
			o[r] = offs[8*i+r]
		}
		wf, ideal := wavefronts(0xFF, &o, 16)
		// 16-byte accesses by 8 lanes form two of wavefronts' phases; count one.
		s.SharedWavefronts += int64(wf - ideal + 1)
		s.SharedBankConflicts += int64(wf - ideal)
	}
	s.SharedRequests++
	return nil
}

// Fragment layouts of mma.sync.aligned.row.col, from the PTX ISA. g is the
// lane's group (lane/4) and q its index in the group (lane%4); i numbers the
// elements of a fragment, two 16-bit elements per register for f16/bf16.
func fragA(shape uint8, at ptype, lane, i int) (row, col int) {
	g, q := lane/4, lane%4
	switch {
	case shape == mmaM16N8K16:
		return g + 8*(i>>1&1), 2*q + i&1 + 8*(i>>2)
	case at == tTF32:
		return g + 8*(i&1), q + 4*(i>>1)
	}
	return g + 8*(i>>1), 2*q + i&1 // m16n8k8 f16
}

func fragB(shape uint8, at ptype, lane, i int) (row, col int) {
	g, q := lane/4, lane%4
	switch {
	case shape == mmaM16N8K16:
		return 2*q + i&1 + 8*(i>>1), g
	case at == tTF32:
		return q + 4*i, g
	}
	return 2*q + i, g // m16n8k8 f16
}

func fragC(lane, i int) (row, col int) {
	g, q := lane/4, lane%4
	return g + 8*(i>>1), 2*q + i&1
}

// elem reads element i of a fragment held in regs: 16-bit types pack two
// elements per register.
func elem(w *warp, regs []opnd, lane, i int, t ptype) float64 {
	if t == tTF32 || t == tF32 {
		v := w.val(&regs[i], lane)
		if t == tTF32 {
			v &^= 0x1FFF // tensor cores ignore the low mantissa bits of tf32
		}
		return f32(v)
	}
	v := w.val(&regs[i/2], lane) >> (16 * (i % 2)) & 0xFFFF
	if t == tBF16 {
		return bf16(v)
	}
	return f16(v)
}

// mma computes D = A*B + C for one warp. Products are exact in float64 and
// summed there; the result is rounded once to the accumulator type.
func (w *warp) mma(in *inst, exec uint32) error {
	if in.flag == mmaM16N8K32 {
		w.mmaFP8(in)
		return nil
	}
	na, nb := int(in.n>>4), int(in.n&15)
	dt, at := in.t, in.t2
	ct := in.t3
	nd := 4
	if dt == tF16 {
		nd = 2
	}
	nc := 4
	if ct == tF16 {
		nc = 2
	}
	dregs := in.more[:nd]
	aregs := in.more[nd : nd+na]
	bregs := in.more[nd+na : nd+na+nb]
	cregs := in.more[nd+na+nb : nd+na+nb+nc]
	k := 16
	if in.flag == mmaM16N8K8 {
		k = 8
	}
	aper, bper := na, nb // elements per lane
	if at != tTF32 {
		aper, bper = 2*na, 2*nb
	}
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	for lane := 0; lane < 32; lane++ {
		for i := 0; i < aper; i++ {
			r, c := fragA(in.flag, at, lane, i)
			A[r][c] = elem(w, aregs, lane, i, at)
		}
		for i := 0; i < bper; i++ {
			r, c := fragB(in.flag, at, lane, i)
			B[r][c] = elem(w, bregs, lane, i, at)
		}
		for i := 0; i < 4; i++ {
			r, c := fragC(lane, i)
			C[r][c] = elem(w, cregs, lane, i, ct)
		}
	}
	var D [16][8]float64
	for r := 0; r < 16; r++ {
		for c := 0; c < 8; c++ {
			s := C[r][c]
			for j := 0; j < k; j++ {
				s += A[r][j] * B[j][c]
			}
			D[r][c] = s
		}
	}
	rnd := inst{rnd: rn}
	for lane := 0; lane < 32; lane++ {
		var out [4]uint64
		for i := 0; i < 4; i++ {
			r, c := fragC(lane, i)
			out[i] = fout(&rnd, dt, D[r][c])
		}
		if dt == tF32 {
			for i := 0; i < 4; i++ {
				w.set(&dregs[i], lane, out[i])
			}
		} else {
			w.set(&dregs[0], lane, out[1]<<16|out[0])
			w.set(&dregs[1], lane, out[3]<<16|out[2])
		}
	}
	return nil
}

// cpAsync issues, commits and waits for asynchronous global-to-shared copies.
// The source is read at issue; the destination is written only when a
// cp.async.wait_group retires the copy's group.
func (w *warp) cpAsync(in *inst, exec uint32) error {
	var addrs [32]uint64 // the lanes' sources, counted as one warp request
	var reads uint32     // lanes that read global memory (src-size > 0)
	for m := exec; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		st := &w.cp[l]
		switch in.op {
		case opCpAsync:
			n := int(in.n)
			src := w.addrOf(in, l)
			dst := w.val(&in.more[0], l) + in.more[1].imm
			srcSize := int(w.val(&in.s[0], l))
			if srcSize > n {
				return w.fail(in, l, "error", "cp.async src-size %d exceeds cp-size %d", srcSize, n)
			}
			data := make([]byte, n)
			if srcSize > 0 {
				var mem []byte
				var err error
				if srcSize < n {
					// Only src-size bytes are read; the rest is zero fill.
					mem, err = w.accessPartial(in, src, srcSize, n, l)
				} else {
					mem, err = w.access(in, spGlobal, src, n, l, accRead)
				}
				if err != nil {
					return err
				}
				copy(data, mem[:srcSize])
			}
			st.cur = append(st.cur, cpCopy{dst: dst, data: data, line: in.line})
			if srcSize > 0 {
				addrs[l] = src
				reads |= 1 << l
			}
		case opCpCommit:
			st.groups = append(st.groups, st.cur)
			st.cur = nil
		case opCpWait:
			keep := int(in.off)
			if keep < 0 { // wait_all also commits
				st.groups = append(st.groups, st.cur)
				st.cur = nil
				keep = 0
			}
			for len(st.groups) > keep {
				for _, c := range st.groups[0] {
					mem, err := w.access(in, spShared, c.dst, len(c.data), l, accWrite)
					if err != nil {
						return err
					}
					copy(mem, c.data)
				}
				st.groups = st.groups[1:]
			}
		}
	}
	if in.op == opCpAsync && reads != 0 {
		w.countMem(in, reads, &addrs, int(in.n), false)
	}
	return nil
}

// accessPartial checks the src-size bytes a zero-filling cp.async reads.
func (w *warp) accessPartial(in *inst, src uint64, srcSize, n, l int) ([]byte, error) {
	if src%uint64(n) != 0 {
		return w.access(in, spGlobal, src, n, l, accRead) // reports the misalignment
	}
	out := make([]byte, n)
	for i := 0; i < srcSize; i++ {
		mem, err := w.access(in, spGlobal, src+uint64(i), 1, l, accRead)
		if err != nil {
			return nil, err
		}
		out[i] = mem[0]
	}
	return out, nil
}
