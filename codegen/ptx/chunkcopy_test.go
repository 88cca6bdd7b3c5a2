package ptx

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// staticChunkSrc is a static product of [nb, seq, 16] operands, V read through views (%1) or,
// plain, as a buffer %v: xᵀ·V → [nb, 16, 16] (V stored [k][free]: its 16 columns contiguous), or
// with kContig x·Vᵀ → [nb, 24, seq] of x [nb, 24, 16] (V's 16 columns are k). The views merge
// heads back, [nb, 16/hd, seq, hd] transposed and reshaped, or with slice set take columns
// slice…slice+8 of [nb, 2, seq, 16] first, so the heads are 8 wide.
func staticChunkSrc(d ir.DType, nb, seq, hd, slice int, kContig, plain bool) string {
	t := d.String()
	var s string
	if kContig {
		s = fmt.Sprintf("graph k {\n  input %%x : %s[%d,24,16]\n", t, nb)
	} else {
		s = fmt.Sprintf("graph k {\n  input %%x : %s[%d,%d,16]\n", t, nb, seq)
	}
	v := "%1"
	switch {
	case plain:
		s += fmt.Sprintf("  input %%v : %s[%d,%d,16]\n", t, nb, seq)
		v = "%v"
	case slice != 0:
		s += fmt.Sprintf("  input %%vb : %[1]s[%[2]d,2,%[3]d,16]\n  %%s = slice(%%vb) {start=[0,0,0,%[4]d], limit=[%[2]d,2,%[3]d,%[5]d]} : %[1]s[%[2]d,2,%[3]d,8]\n  %%0 = transpose(%%s) {perm=[0,2,1,3]} : %[1]s[%[2]d,%[3]d,2,8]\n  %%1 = reshape(%%0) {shape=[%[2]d,%[3]d,16]} : %[1]s[%[2]d,%[3]d,16]\n", t, nb, seq, slice, slice+8)
	default:
		s += fmt.Sprintf("  input %%vh : %[1]s[%[2]d,%[4]d,%[3]d,%[5]d]\n  %%0 = transpose(%%vh) {perm=[0,2,1,3]} : %[1]s[%[2]d,%[3]d,%[4]d,%[5]d]\n  %%1 = reshape(%%0) {shape=[%[2]d,%[3]d,16]} : %[1]s[%[2]d,%[3]d,16]\n", t, nb, seq, 16/hd, hd)
	}
	if kContig {
		return s + fmt.Sprintf("  %%2 = dot_general(%%x, %s) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : %s[%d,24,%d]\n  output out = %%2\n}\n", v, t, nb, seq)
	}
	return s + fmt.Sprintf("  %%2 = dot_general(%%x, %s) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : %s[%d,16,16]\n  output out = %%2\n}\n", v, t, nb)
}

// TestStaticChunkCopies: a static build's generic tensor-core operand whose views make its
// contiguous dim 16-byte chunks at 16-byte-aligned addresses copies the chunks (symchunk.go,
// decided at build time: no branch); one whose views do not (heads of 4 16-bit elements, a slice
// starting at column 4) keeps the element copies. Narrow assertions on the PTX: with chunks no
// element copy and as many 16-byte cp.async as the product reading V as a plain buffer, without
// them element copies. Each runs on the memchecked simulator bit for bit the plain product on V's
// values (the same shared tiles, so the same mma), within tolerance of the reference; ptxas
// assembles sm_80 and sm_90.
func TestStaticChunkCopies(t *testing.T) {
	elem := regexp.MustCompile(`ld\.global\.u16|cp\.async\.ca\.shared\.global.*, 4, `)
	chunk := regexp.MustCompile(`cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, `)
	for _, c := range []struct {
		d         ir.DType
		tf32      bool
		hd, slice int
		kContig   bool
		nb, seq   int
		chunks    bool
	}{
		{ir.F16, false, 8, 0, false, 2, 40, true},   // gpt's heads merged back
		{ir.BF16, false, 8, 0, false, 1, 13, true},  // a ragged K
		{ir.F16, false, 8, 0, true, 2, 13, true},    // chunks along k, N ragged
		{ir.BF16, false, 8, 0, true, 1, 200, true},  // two column tiles
		{ir.F16, false, 4, 0, false, 2, 40, false},  // heads of 4 halves: 8 bytes
		{ir.BF16, false, 4, 0, true, 1, 13, false},  // along k too
		{ir.F16, false, 0, 8, false, 2, 24, true},   // a slice at column 8
		{ir.BF16, false, 0, 4, false, 2, 24, false}, // at column 4: not aligned
		{ir.F16, false, 0, 4, true, 1, 9, false},
		{ir.F32, true, 4, 0, false, 2, 40, true}, // tf32: chunks of 4 floats
		{ir.F32, true, 4, 0, true, 1, 13, true},
		{ir.F32, true, 2, 0, false, 2, 40, false},
		{ir.F32, true, 0, 4, true, 2, 24, true},
		{ir.F32, true, 0, 2, false, 1, 24, false},
		{ir.F16, false, 8, 0, false, 1, 0, true}, // K = 0
	} {
		name := fmt.Sprintf("%s/tf32=%v/hd=%d/slice=%d/kContig=%v/nb=%d/seq=%d", c.d, c.tf32, c.hd, c.slice, c.kContig, c.nb, c.seq)
		t.Run(name, func(t *testing.T) {
			tgt := Target{SM: 80, TF32: c.tf32}
			g := parse(t, staticChunkSrc(c.d, c.nb, c.seq, c.hd, c.slice, c.kContig, false))
			gp := parse(t, staticChunkSrc(c.d, c.nb, c.seq, 0, 0, c.kContig, true))
			text, l, err := Module([]Kernel{{Name: "k0", Graph: g}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			plain, _, err := Module([]Kernel{{Name: "k0", Graph: gp}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`mma\.sync`).MatchString(text) {
				t.Fatal("not on tensor cores")
			}
			assemble(t, text)
			if regexp.MustCompile(`bra \$L_elem_copies_`).MatchString(text) {
				t.Error("a static kernel branches between chunk and element copies")
			}
			n, np := len(chunk.FindAllString(text, -1)), len(chunk.FindAllString(plain, -1))
			if got := elem.MatchString(text); got == c.chunks {
				t.Errorf("element copies %v, want %v", got, !c.chunks)
			}
			if c.chunks && n != np || !c.chunks && n >= np {
				t.Errorf("%d 16-byte copies, the plain product %d (chunks %v)", n, np, c.chunks)
			}

			in, _, err := tensor.SeededValues(g, uint64(c.seq))
			if err != nil {
				t.Fatal(err)
			}
			// V's values as a buffer: the views evaluated by the reference.
			vg := parse(t, viewsOnly(staticChunkSrc(c.d, c.nb, c.seq, c.hd, c.slice, c.kContig, false)))
			vin := map[string]*tensor.Tensor{}
			for _, p := range vg.Inputs() {
				vin[p.Name] = in[p.Name]
			}
			vs, err := ref.Run(vg, vin, nil)
			if err != nil {
				t.Fatal(err)
			}
			pin := map[string]*tensor.Tensor{"x": in["x"], "v": vs["out"]}
			run := runStatic(t, "k0", g, in, tgt)
			prun := runStatic(t, "k0", gp, pin, tgt)
			ty := g.Outputs[0].Value.Type
			got, want := make([]byte, ty.Bytes()), make([]byte, ty.Bytes())
			if err := run.dev.Read(run.outAddr["out"], got); err != nil {
				t.Fatal(err)
			}
			if err := prun.dev.Read(prun.outAddr["out"], want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("the output differs from the plain product's")
			}
			r, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			o, err := tensor.FromBytes(ty, got)
			if err != nil {
				t.Fatal(err)
			}
			k := c.seq
			if c.kContig {
				k = 16
			}
			compare(t, name, o, r["out"], false, contractPrec(c.d, c.tf32), k, 1)
			t.Logf("%d warp instructions, the plain product %d", run.stats.WarpInsts, prun.stats.WarpInsts)
			// Every 16-byte copy's source, the clamped one of a chunk past the matrix included,
			// is an aligned chunk inside its buffer (cp.async asks alignment of a copy moving no
			// bytes too): made to read all 16 bytes, the launch passes memcheck (V not empty).
			if c.seq == 0 {
				return
			}
			full := regexp.MustCompile(`(cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16), [^;]+;`).ReplaceAllString(text, "$1, 16;")
			if _, err := launchSim(t, full, "k0", l[0], g, in); err != nil {
				t.Errorf("16-byte copies reading in full: %v", err)
			}
		})
	}
}

// viewsOnly turns staticChunkSrc's graph into one whose output is V's view %1 (x unused dropped).
func viewsOnly(src string) string {
	src = regexp.MustCompile(`  input %x : [^\n]*\n`).ReplaceAllString(src, "")
	src = regexp.MustCompile(`  %2 = dot_general[^\n]*\n  output out = %2\n`).ReplaceAllString(src, "  output out = %1\n")
	return src
}
