package sim_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/sim"
)

const scalePTX = `
.version 7.8
.target sm_80
.address_size 64

.visible .entry scale(.param .u64 x, .param .f32 a, .param .u32 n)
{
	.reg .pred %p1;
	.reg .b32 %r<5>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [x];
	ld.param.f32 %f1, [a];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r2, %r2, %r3, %r4;
	setp.ge.u32 %p1, %r2, %r1;
	@%p1 bra DONE;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f2, [%rd3];
	mul.f32 %f2, %f2, %f1;
	st.global.f32 [%rd3], %f2;
DONE:
	ret;
}
`

func ExampleModule_Launch() {
	dev := sim.NewDevice()
	m, err := dev.Load(scalePTX)
	if err != nil {
		panic(err)
	}
	const n = 100
	host := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(host[4*i:], math.Float32bits(float32(i)))
	}
	x, _ := dev.Alloc(len(host))
	dev.Write(x, host)
	st, err := m.Launch("scale", sim.Config{Grid: sim.Dim3{X: 2, Y: 1, Z: 1}, Block: sim.Dim3{X: 64, Y: 1, Z: 1}},
		x, float32(0.5), uint32(n))
	if err != nil {
		panic(err)
	}
	dev.Read(x, host)
	fmt.Println(math.Float32frombits(binary.LittleEndian.Uint32(host[4*99:])))
	fmt.Println(st.GlobalLoadBytes, st.GlobalLoadSectors)

	// A launch that reads past the end of the buffer is reported, not run.
	_, err = m.Launch("scale", sim.Config{Grid: sim.Dim3{X: 2, Y: 1, Z: 1}, Block: sim.Dim3{X: 64, Y: 1, Z: 1}},
		x, float32(0.5), uint32(n+1))
	fmt.Println(err)
	// Output:
	// 49.5
	// 400 13
	// memcheck: kernel scale, line 23 (ld.global.f32 %f2, [%rd3]), thread (36,0,0), block (1,0,0): out-of-bounds global load of 4 bytes at 0x100000000190: 0 bytes past the end of allocation #1 [0x100000000000, +400)
}

// TestExampleAssembles: the example's kernel is PTX a GPU accepts.
func TestExampleAssembles(t *testing.T) {
	ptxas.Require(t)
	for _, arch := range []string{"sm_80", "sm_90"} {
		if _, err := ptxas.Assemble([]byte(scalePTX), arch); err != nil {
			t.Fatalf("ptxas -arch=%s: %v", arch, err)
		}
	}
}
