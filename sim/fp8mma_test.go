package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
)

// fp8MmaModule: lane l loads its A registers from a[4l..], B from b[2l..], C from c[4l..] and
// stores D to d[4l..].
func fp8MmaModule(target, at, bt string) string {
	return fmt.Sprintf(`.version 8.4
.target %s
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
	.reg .b32 %%a<4>;
	.reg .b32 %%b<2>;
	.reg .f32 %%c<4>;
	.reg .f32 %%d<4>;
	.reg .b32 %%r<2>;
	.reg .b64 %%rd<9>;
	ld.param.u64 %%rd1, [pa];
	ld.param.u64 %%rd2, [pb];
	ld.param.u64 %%rd3, [pc];
	ld.param.u64 %%rd4, [pd];
	mov.u32 %%r1, %%tid.x;
	mul.wide.u32 %%rd5, %%r1, 16;
	mul.wide.u32 %%rd6, %%r1, 8;
	add.u64 %%rd1, %%rd1, %%rd5;
	add.u64 %%rd2, %%rd2, %%rd6;
	add.u64 %%rd3, %%rd3, %%rd5;
	add.u64 %%rd4, %%rd4, %%rd5;
	ld.global.v4.b32 {%%a0, %%a1, %%a2, %%a3}, [%%rd1];
	ld.global.v2.b32 {%%b0, %%b1}, [%%rd2];
	ld.global.v4.f32 {%%c0, %%c1, %%c2, %%c3}, [%%rd3];
	mma.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32 {%%d0, %%d1, %%d2, %%d3}, {%%a0, %%a1, %%a2, %%a3}, {%%b0, %%b1}, {%%c0, %%c1, %%c2, %%c3};
	st.global.v4.f32 [%%rd4], {%%d0, %%d1, %%d2, %%d3};
	ret;
}
`, target, at, bt)
}

// TestFP8Mma checks m16n8k32 over every pair of formats against D = C + A·B computed from
// matrices placed by the PTX ISA's fragment tables, written here as the ISA states them.
func TestFP8Mma(t *testing.T) {
	specs := map[string]f8spec{"e4m3": f8specs[0], "e5m2": f8specs[1]}
	for _, at := range []string{"e4m3", "e5m2"} {
		for _, bt := range []string{"e4m3", "e5m2"} {
			t.Run(at+"_"+bt, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(len(at)), uint64(bt[1])))
				finite := func(s f8spec) uint8 {
					for {
						c := uint8(r.Uint32())
						if v, ok := s.value(c); ok && !math.IsInf(v, 0) {
							return c
						}
					}
				}
				var A [16][32]uint8
				var B [32][8]uint8
				var C [16][8]float32
				for i := range A {
					for j := range A[i] {
						A[i][j] = finite(specs[at])
					}
				}
				for i := range B {
					for j := range B[i] {
						B[i][j] = finite(specs[bt])
					}
				}
				for i := range C {
					for j := range C[i] {
						C[i][j] = float32(r.NormFloat64())
					}
				}
				A[3][5] = 0x7F // NaN in both formats: row 3 of D is NaN
				abuf, bbuf, cbuf := make([]byte, 32*16), make([]byte, 32*8), make([]byte, 32*16)
				for lane := 0; lane < 32; lane++ {
					group, tig := lane>>2, lane%4
					for i := 0; i < 16; i++ {
						row := group + 8
						if i < 4 || 8 <= i && i < 12 {
							row = group
						}
						col := tig*4 + i&3
						if i >= 8 {
							col += 16
						}
						abuf[16*lane+i] = A[row][col]
					}
					for i := 0; i < 8; i++ {
						row := tig*4 + i&3
						if i >= 4 {
							row += 16
						}
						bbuf[8*lane+i] = B[row][group]
					}
					for i := 0; i < 4; i++ {
						row, col := group, tig*2+i&1
						if i >= 2 {
							row += 8
						}
						binary.LittleEndian.PutUint32(cbuf[16*lane+4*i:], math.Float32bits(C[row][col]))
					}
				}
				dev := NewDevice()
				m := load(t, dev, fp8MmaModule("sm_90", at, bt))
				pa, pb, pc := upload(t, dev, abuf), upload(t, dev, bbuf), upload(t, dev, cbuf)
				pd, _ := dev.Alloc(32 * 16)
				if _, err := m.Launch("k", grid(1, 32), pa, pb, pc, pd); err != nil {
					t.Fatal(err)
				}
				got := bytesF32s(download(t, dev, pd, 32*16))
				for lane := 0; lane < 32; lane++ {
					group, tig := lane>>2, lane%4
					for i := 0; i < 4; i++ {
						row, col := group, tig*2+i&1
						if i >= 2 {
							row += 8
						}
						want := float64(C[row][col])
						for k := 0; k < 32; k++ {
							av, _ := specs[at].value(A[row][k])
							bv, _ := specs[bt].value(B[k][col])
							want += av * bv // exact: 32 products of 4-bit significands within 2^±40
						}
						if row == 3 {
							want = math.NaN()
						}
						g := got[4*lane+i]
						if !(float64(g) == float64(float32(want)) || math.IsNaN(want) && g != g) {
							t.Errorf("D[%d][%d] = %g, want %g", row, col, g, float32(want))
						}
					}
				}
			})
		}
	}
}

// TestFP8MmaAssembles: ptxas 12.4 takes the kernel for sm_89 and sm_90 (PTX ISA 8.4).
func TestFP8MmaAssembles(t *testing.T) {
	ptxas.Require12(t)
	for _, arch := range []string{"sm_89", "sm_90"} {
		if _, err := ptxas.Assemble([]byte(fp8MmaModule(arch, "e4m3", "e5m2")), arch); err != nil {
			t.Errorf("%s: %v", arch, err)
		}
	}
}
