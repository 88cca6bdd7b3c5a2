package sim

import (
	"errors"
	"strings"
	"testing"
)

// Registers: every thread holds the module's whole register file, so three
// declarations of a million 64-bit registers with 1024 threads would need
// 24 GiB per block. Launch refuses, with the numbers, before allocating.
func TestRegisterBudget(t *testing.T) {
	src := kernel(".param .u64 p", `
	.reg .b64 %x<1000000>;
	.reg .b64 %y<1000000>;
	.reg .b64 %z<1000000>;
	ld.param.u64 %x1, [p];
	mov.u64 %y999999, 7;
	st.global.u64 [%x1], %y999999;`)
	dev := NewDevice()
	m := load(t, dev, src)
	p := upload(t, dev, make([]byte, 8))
	_, err := m.Launch("k", grid(1, 1024), p)
	if err == nil || !strings.Contains(err.Error(), "kernel k: the module's 3000027 registers × 1024 threads need 23437 MiB of simulated registers per block, more than the simulator's 1024 MiB") {
		t.Fatalf("err = %v", err)
	}
}

// Register ranges are looked up by prefix, not expanded into names: every
// name resolves as before, and a name two declarations share is an error.
func TestRegisterDeclarations(t *testing.T) {
	tests := []struct {
		decls, use string
		err        string // "" loads
	}{
		{".reg .b32 %r<10>;\n.reg .b32 %r1<3>;", "mov.u32 %r10, %r9; mov.u32 %r12, %r0;", ""},
		{".reg .b32 %r<20>;\n.reg .b32 %r1<3>;", "", "register %r10 declared twice"},
		{".reg .b32 %r1<3>;\n.reg .b32 %r<20>;", "", "register %r10 declared twice"},
		{".reg .b32 %r<5>;\n.reg .b32 %r3;", "", "register %r3 declared twice"},
		{".reg .b32 %r3;\n.reg .b32 %r<5>;", "", "register %r3 declared twice"},
		{".reg .b32 %r<5>;\n.reg .b32 %r<2>;", "", "declared twice"},
		{".reg .b32 %r<5>;\n.reg .b32 %r5;", "mov.u32 %r5, %r4;", ""},
		{".reg .b32 %r<5>;", "mov.u32 %r5, 1;", "undefined register %r5"},
		{".reg .b32 %r<20>;", "mov.u32 %r05, 1;", "undefined register %r05"},
		{".reg .b32 %r<5>;\n.reg .pred %p<2>;", "@%p1 mov.u32 %r4, 1;", ""},
		{".reg .b32 %r<5>;", "@%r1 mov.u32 %r4, 1;", "guard %r1 is not a predicate register"},
	}
	for _, tc := range tests {
		_, err := NewDevice().Load(kernel("", tc.decls+"\n"+tc.use))
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q %q: err %v, want %q", tc.decls, tc.use, err, tc.err)
		}
	}
	// Slots follow declaration order: %r1<3>'s %r10 is not %r<10>'s.
	src := kernel(".param .u64 p", `
	.reg .b64 %rd<2>;
	.reg .b32 %r<10>;
	.reg .b32 %r1<3>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r9, 9;
	mov.u32 %r10, 10;
	mov.u32 %r12, 12;
	st.global.u32 [%rd1], %r9;
	st.global.u32 [%rd1+4], %r10;
	st.global.u32 [%rd1+8], %r12;`)
	dev := NewDevice()
	p := upload(t, dev, make([]byte, 12))
	if _, err := load(t, dev, src).Launch("k", grid(1, 1), p); err != nil {
		t.Fatal(err)
	}
	if got := bytesU32s(download(t, dev, p, 12)); got[0] != 9 || got[1] != 10 || got[2] != 12 {
		t.Errorf("got %v", got)
	}
}

// The device holds at most its memory limit: an allocation beyond it is an
// error naming the numbers, and freeing makes room again.
func TestMemoryLimit(t *testing.T) {
	if d := DefaultMemoryLimit(); d <= 0 || d > 8<<30 {
		t.Errorf("DefaultMemoryLimit() = %d", d)
	}
	dev := NewDevice()
	if dev.MemoryLimit() != DefaultMemoryLimit() {
		t.Errorf("a new device's limit is %d", dev.MemoryLimit())
	}
	for _, bad := range []int64{0, -1, 1<<40 + 1} {
		if err := dev.SetMemoryLimit(bad); err == nil {
			t.Errorf("SetMemoryLimit(%d) accepted", bad)
		}
	}
	if err := dev.SetMemoryLimit(1000); err != nil {
		t.Fatal(err)
	}
	a, err := dev.Alloc(600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Alloc(401); err == nil || !strings.Contains(err.Error(), "out of device memory allocating 401 bytes: 600 of the simulator's 1000-byte limit are in use") {
		t.Errorf("Alloc(401) = %v", err)
	} else if !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("Alloc(401) = %v, not ErrOutOfMemory to errors.Is", err)
	}
	if _, err := dev.Load(".global .b8 x[401];\n"); err == nil || !strings.Contains(err.Error(), "out of device memory") {
		t.Errorf("a 401-byte variable: %v", err)
	}
	if _, err := dev.Alloc(400); err != nil {
		t.Fatal(err)
	}
	if err := dev.Free(a); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Alloc(600); err != nil {
		t.Errorf("after Free: %v", err)
	}
	// Lowering the limit below what is held refuses new allocations.
	if err := dev.SetMemoryLimit(10); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Alloc(1); err == nil {
		t.Error("Alloc above a lowered limit succeeded")
	}
}

// 196608 registers × 1024 threads are 1.5 GiB per block: refused before any
// is allocated.
func TestRegisterBudgetBoundary(t *testing.T) {
	src := kernel("", "\t.reg .b64 %x<196581>;\n\tmov.u64 %x1, 1;")
	dev := NewDevice()
	_, err := load(t, dev, src).Launch("k", grid(1, 1024))
	if err == nil || !strings.Contains(err.Error(), "the module's 196608 registers × 1024 threads need 1536 MiB") {
		t.Fatalf("err = %v", err)
	}
}

// The whole launch's work is bounded, not only each block's: a grid too large to simulate is
// refused before it runs, and blocks that together run past the budget stop the launch.
func TestLaunchBudget(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, kernel("", "ret;"))
	spin := load(t, dev, kernel("", `
	.reg .b32 %r<2>;
	.reg .pred %p<2>;
	mov.u32 %r1, 0;
L:
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 100;
	@%p1 bra L;
	ret;`))
	for _, tc := range []struct {
		name string
		m    *Module
		cfg  Config
		want string // "" runs
	}{
		{"huge grid", m, grid(1<<30, 256), "sim: kernel k: grid (1073741824,1,1) × block (256,1,1) is at least 42949672960 warp instructions to simulate (a block costs 32 to start), more than a launch's budget of 4294967296"},
		{"huge grid of one thread", m, Config{Grid: Dim3{1 << 28, 4, 1}, Block: Dim3{1, 1, 1}}, "is at least 35433480192 warp instructions"},
		{"within", spin, Config{Grid: Dim3{4, 1, 1}, Block: Dim3{32, 1, 1}, MaxLaunchSteps: 4 * (302 + 32)}, ""},
		{"past the budget", spin, Config{Grid: Dim3{8, 1, 1}, Block: Dim3{32, 1, 1}, MaxLaunchSteps: 4 * (302 + 32)},
			"sim: kernel k: grid (8,1,1) × block (32,1,1) did not finish within a launch's budget of 1336 warp instructions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.m.Launch("k", tc.cfg)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
