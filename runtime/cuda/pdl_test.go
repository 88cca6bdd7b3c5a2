package cuda_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
)

// pdlModule: produce writes a[i] = i + 100 and lets its dependent start at once; consume loads
// b[i] (written by no kernel) before its griddepcontrol.wait and a[i] after it, c[i] = a[i] + b[i];
// early reads a[i] before its wait. 4 blocks of 64 threads each.
const pdlModule = `.version 7.8
.target sm_90
.address_size 64
.visible .entry produce(.param .u64 pa)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd1, [pa];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mad.lo.s32 %r1, %r1, 64, %r2;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.u32 %r3, %r1, 100;
	st.global.u32 [%rd1], %r3;
	ret;
}
.visible .entry consume(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<6>;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd3, [pb];
	ld.param.u64 %rd4, [pc];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd3, %rd3;
	cvta.to.global.u64 %rd4, %rd4;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mad.lo.s32 %r1, %r1, 64, %r2;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.s64 %rd3, %rd3, %rd2;
	add.s64 %rd4, %rd4, %rd2;
	ld.global.u32 %r3, [%rd3];
	griddepcontrol.wait;
	ld.global.u32 %r4, [%rd1];
	add.u32 %r3, %r3, %r4;
	st.global.u32 [%rd4], %r3;
	ret;
}
.visible .entry early(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd4, [pc];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd4, %rd4;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mad.lo.s32 %r1, %r1, 64, %r2;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.s64 %rd4, %rd4, %rd2;
	ld.global.u32 %r4, [%rd1];
	griddepcontrol.wait;
	st.global.u32 [%rd4], %r4;
	ret;
}
`

const pdlN = 256

// runPDLChain runs produce, then second (consume or early) launched with pdl, and returns c.
func runPDLChain(t *testing.T, dev *cuda.Device, second string, pdl bool) ([]uint32, error) {
	t.Helper()
	m, err := dev.Load([]byte(pdlModule))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bufs := make([]executor.Ptr, 3)
	for i := range bufs {
		if bufs[i], err = dev.Alloc(4 * pdlN); err != nil {
			t.Fatal(err)
		}
		defer dev.Free(bufs[i])
	}
	b := make([]byte, 4*pdlN)
	for i := range pdlN {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(7*i))
	}
	if err := dev.Write(bufs[1], b); err != nil {
		t.Fatal(err)
	}
	cfg := executor.LaunchConfig{Grid: [3]int{pdlN / 64, 1, 1}, Block: [3]int{64, 1, 1}}
	if _, err := m.Launch("produce", cfg, bufs[:1]); err != nil {
		t.Fatal(err)
	}
	cfg.PDL = pdl
	if _, err := m.Launch(second, cfg, bufs); err != nil {
		return nil, err
	}
	if err := dev.Sync(); err != nil {
		return nil, err
	}
	out := make([]byte, 4*pdlN)
	if err := dev.Read(out, bufs[2]); err != nil {
		t.Fatal(err)
	}
	c := make([]uint32, pdlN)
	for i := range c {
		c[i] = binary.LittleEndian.Uint32(out[4*i:])
	}
	return c, nil
}

// TestDependentLaunchOnSimDriver: a launch asking for PDL reaches the driver as
// cuLaunchKernelEx (the simulator-backed driver, an sm_90 device, runs it as a dependent launch
// and checks its reads before griddepcontrol.wait): a kernel that waits before reading the
// previous kernel's output computes the right values; one that reads it first is a
// dependent-launch race, which the same kernel launched without PDL is not.
func TestDependentLaunchOnSimDriver(t *testing.T) {
	for _, c := range []struct {
		kernel string
		pdl    bool
		race   bool
	}{
		{"consume", true, false},
		{"consume", false, false},
		{"early", true, true},
		{"early", false, false},
	} {
		dev, err := cuda.Open(simdriver.New(), 0, cuda.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := runPDLChain(t, dev, c.kernel, c.pdl)
		dev.Close()
		if c.race {
			if err == nil || !strings.Contains(err.Error(), "dependent-launch race") {
				t.Errorf("%s, pdl %v: error %v, want a dependent-launch race", c.kernel, c.pdl, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s, pdl %v: %v", c.kernel, c.pdl, err)
		}
		for i, v := range got {
			want := uint32(i + 100)
			if c.kernel == "consume" {
				want += uint32(7 * i)
			}
			if v != want {
				t.Fatalf("%s, pdl %v: c[%d] = %d, want %d", c.kernel, c.pdl, i, v, want)
			}
		}
	}
}
