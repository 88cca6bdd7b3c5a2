//go:build linux && (amd64 || arm64) && !gorgonia && !nocuda

package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/gcomp/gcomp/runtime/executor"
)

// buildFakeLibrary compiles testdata/fakecuda.c, a stand-in for
// libcuda.so.1, with the C compiler ($CC, else cc), or skips the test.
func buildFakeLibrary(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler to build the fake driver library: %v", err)
	}
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, filepath.Join("testdata", "fakecuda.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	return lib
}

// TestPuregoABI drives a Device through the purego loader against a C
// library with cuda.h's signatures, so every Go declaration of a driver
// function is checked against C: argument order and widths (cuLaunchKernel
// passes five of its eleven arguments on the stack), out-parameters, the
// JIT options of cuModuleLoadDataEx, float results, C strings.
func TestPuregoABI(t *testing.T) {
	lib := buildFakeLibrary(t)
	drv, err := Load(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Init(); err != nil {
		t.Fatal(err)
	}
	if v, err := drv.DriverVersion(); v != 12040 || err != nil {
		t.Errorf("DriverVersion = %d, %v", v, err)
	}
	d, err := Open(drv, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Info(), (Info{Name: "Fake C GPU", Arch: Arch{Major: 8, Minor: 6}, SMs: 84, TotalMem: 3 << 30}); got != want {
		t.Errorf("Info = %+v, want %+v", got, want)
	}
	if free, total, err := d.MemInfo(); free != 1<<30 || total != 3<<30 || err != nil {
		t.Errorf("MemInfo = %d, %d, %v", free, total, err)
	}

	// Copies through pinned staging buffers and memset.
	p, err := d.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	in := []byte(strings.Repeat("gcomp", 20))
	if err := d.Write(p, in); err != nil {
		t.Fatal(err)
	}
	if err := d.Zero(p+10, 5); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 100)
	if err := d.Read(out, p); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), in[:10]...), make([]byte, 5)...), in[15:]...)
	if string(out) != string(want) {
		t.Errorf("read back %q, want %q", out, want)
	}

	// The JIT's logs.
	_, err = d.Load([]byte(".version 7.8\n.target sm_80\nbogus\n"))
	if err == nil || !strings.HasSuffix(err.Error(), "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed\nJIT log:\nptxas application ptx input, line 2; error   : Unknown symbol 'bogus'") {
		t.Errorf("invalid PTX: %v", err)
	}
	m, err := d.Load([]byte(".version 7.8\n.target sm_86\n.visible .entry k()\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Launch("nope", executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}, nil); err == nil || !strings.Contains(err.Error(), `no kernel "nope" (it has k)`) {
		t.Errorf("unknown kernel: %v", err)
	}

	// The launch: every argument where C expects it.
	d.SetProfile(true)
	args := []executor.Ptr{p, 0x1122334455667788, 0xfffffffffffffff0}
	c, err := m.Launch("k", executor.LaunchConfig{Grid: [3]int{2, 3, 4}, Block: [3]int{32, 2, 1}, SharedBytes: 128}, args)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || c.Time != 2500*time.Microsecond {
		t.Errorf("counters = %+v, want Time 2.5ms", c)
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW)
	if err != nil {
		t.Fatal(err)
	}
	var lastLaunch func(out *[16]uint64)
	purego.RegisterLibFunc(&lastLaunch, h, "fake_last_launch")
	var rec [16]uint64
	lastLaunch(&rec)
	wantRec := [16]uint64{0x9abc, 2, 3, 4, 32, 2, 1, 128, uint64(d.stream), uint64(p), 0x1122334455667788, 0xfffffffffffffff0, 1}
	if rec != wantRec {
		t.Errorf("cuLaunchKernel received %#x,\nwant %#x", rec, wantRec)
	}

	// An upload on the second stream from pinned memory, and the compute stream waiting for it.
	host, err := d.AllocHost(16)
	if err != nil {
		t.Fatal(err)
	}
	copy(host, "uploaded pinned!")
	ev, err := d.Upload([]executor.HostCopy{{Dst: p, Src: host}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(ev); err != nil {
		t.Fatal(err)
	}
	var lastWait func(out *[3]uint64)
	purego.RegisterLibFunc(&lastWait, h, "fake_last_wait")
	var wait [3]uint64
	lastWait(&wait)
	if want := [3]uint64{uint64(d.stream), uint64(d.events[ev]), 0}; wait != want || d.copier == d.stream {
		t.Errorf("cuStreamWaitEvent received %#x, want %#x (the compute stream %#x, the copy stream %#x)", wait, want, d.stream, d.copier)
	}
	if err := d.Read(out[:16], p); err != nil || string(out[:16]) != "uploaded pinned!" {
		t.Errorf("read back %q, %v", out[:16], err)
	}
	if err := d.FreeHost(host); err != nil {
		t.Error(err)
	}

	// Host functions on another stream, called back from threads the library creates, in order.
	comm, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	var ran []int
	for i := range 3 {
		if err := d.LaunchHostFunc(comm, func() { ran = append(ran, i) }); err != nil {
			t.Fatal(err)
		}
	}
	if len(ran) != 0 {
		t.Errorf("host functions ran before the stream was synchronized: %v", ran)
	}
	if err := d.SyncStream(comm); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ran) != "[0 1 2]" {
		t.Errorf("host functions ran %v, want [0 1 2]", ran)
	}
	if err := d.LaunchHostFunc(0x1234, func() {}); err == nil || !strings.Contains(err.Error(), "not one of the device's") {
		t.Errorf("a host function on a foreign stream: %v", err)
	}

	// Out of memory, with the driver's error name.
	_, err = d.Alloc(2 << 30)
	if want := "cuda:0: out of memory: requested 2.0 GiB (2147483648 bytes), 1.0 GiB free of 3.0 GiB (gcomp holds 100 B): cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"; err == nil || err.Error() != want {
		t.Errorf("Alloc: %v, want %q", err, want)
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
}
