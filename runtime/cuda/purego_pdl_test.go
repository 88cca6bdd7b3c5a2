//go:build linux && (amd64 || arm64) && !gorgonia && !nocuda

package cuda

import (
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// TestPuregoLaunchKernelEx: a programmatic dependent launch reaches C's cuLaunchKernelEx with
// cuda.h's CUlaunchConfig layout (grid, block, shared bytes, the stream at offset 32, one
// attribute: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 with the value 1) and the
// parameters by pointer; a failure names cuLaunchKernelEx.
func TestPuregoLaunchKernelEx(t *testing.T) {
	lib := buildFakeLibrary(t)
	drv, err := Load(lib)
	if err != nil {
		t.Fatal(err)
	}
	dl, ok := drv.(DependentLauncher)
	if !ok {
		t.Fatal("the purego driver makes no dependent launches")
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW)
	if err != nil {
		t.Fatal(err)
	}
	var lastLaunch func(out *[16]uint64)
	purego.RegisterLibFunc(&lastLaunch, h, "fake_last_launch")
	params := []uint64{0xdead0000, 0x1122334455667788, 0xfffffffffffffff0}
	if err := dl.LaunchKernelDependent(0x9abc, [3]uint32{132, 2, 3}, [3]uint32{256, 1, 1}, 4096, 0x5757, params); err != nil {
		t.Fatal(err)
	}
	var rec [16]uint64
	lastLaunch(&rec)
	want := [16]uint64{0x9abc, 132, 2, 3, 256, 1, 1, 4096, 0x5757, 0xdead0000, 0x1122334455667788, 0xfffffffffffffff0, 1, 1, 6, 1}
	if rec != want {
		t.Errorf("cuLaunchKernelEx received %#x,\nwant %#x", rec, want)
	}
	if err := dl.LaunchKernelDependent(0x1234, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0x5757, params); err == nil || !strings.Contains(err.Error(), "cuLaunchKernelEx") {
		t.Errorf("bad function: %v, want a cuLaunchKernelEx error", err)
	}
}
