package device

import (
	"errors"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/cudatest"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Spec
		err  string
	}{
		{"auto", Spec{Kind: Auto}, ""},
		{"cuda", Spec{Kind: CUDA}, ""},
		{"cuda:0", Spec{Kind: CUDA}, ""},
		{"cuda:3", Spec{Kind: CUDA, Ordinal: 3}, ""},
		{"sim", Spec{Kind: Sim}, ""},
		{"ref", Spec{Kind: Ref}, ""},
		{"cuda:", Spec{}, `unknown device "cuda:" (want auto, cuda, cuda:N, sim or ref)`},
		{"cuda:-1", Spec{}, `unknown device "cuda:-1" (want auto, cuda, cuda:N, sim or ref)`},
		{"cuda:01", Spec{}, `unknown device "cuda:01" (want auto, cuda, cuda:N, sim or ref)`},
		{"cuda:+1", Spec{}, `unknown device "cuda:+1" (want auto, cuda, cuda:N, sim or ref)`},
		{"gpu", Spec{}, `unknown device "gpu" (want auto, cuda, cuda:N, sim or ref)`},
		{"", Spec{}, `unknown device "" (want auto, cuda, cuda:N, sim or ref)`},
	} {
		got, err := Parse(tc.name)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Parse(%q) error = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
		if tc.name != "cuda" && got.String() != tc.name {
			t.Errorf("Parse(%q).String() = %q", tc.name, got)
		}
	}
}

// noDeviceWant is what the driver says without a GPU.
const noDeviceWant = "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected)"

// TestNoGPU runs the selection against NVIDIA's driver library on a machine
// without a GPU (the CI machines): the driver loads and reports its
// version, there is no CUDA device, auto falls back to the simulator and
// cuda:0 is a clear error.
func TestNoGPU(t *testing.T) {
	lib := cudatest.Library(t)
	opts := Options{CUDALib: lib}
	r := Probe(opts)
	if r.DriverVersion < 11000 {
		t.Errorf("driver version %d", r.DriverVersion)
	}
	if r.Usable() {
		t.Skipf("this machine has a usable GPU: %+v", r.GPUs)
	}
	if r.Reason != noDeviceWant || len(r.GPUs) != 0 || r.Library != lib {
		t.Errorf("Probe = %+v, want reason %q", r, noDeviceWant)
	}
	sel, err := Open("auto", opts)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Spec.Kind != Sim || sel.Fallback != noDeviceWant || sel.Device == nil {
		t.Errorf("auto = %+v, want the simulator and the reason", sel)
	}
	if _, ok := sel.Device.(*simdev.Device); !ok {
		t.Errorf("auto opened %T", sel.Device)
	}
	_, err = Open("cuda:0", opts)
	if want := "device cuda:0: " + noDeviceWant; err == nil || err.Error() != want {
		t.Errorf("cuda:0: %v, want %q", err, want)
	}
	if !errors.Is(err, cuda.ErrNoDevice) {
		t.Errorf("cuda:0: %v is not cuda.ErrNoDevice", err)
	}
	t.Setenv(cuda.LibraryEnv, lib)
	if Available() || Count() != 0 {
		t.Errorf("Available() = %v, Count() = %d without a GPU", Available(), Count())
	}
}

// TestNoLibrary: with no driver library, Probe says so, auto falls back and
// cuda:N fails with the loader's message.
func TestNoLibrary(t *testing.T) {
	const lib = "/nonexistent/libcuda.so.1"
	want := "no CUDA driver library (libcuda.so.1) found: " + lib + ": cannot open shared object file: No such file or directory"
	opts := Options{CUDALib: lib}
	r := Probe(opts)
	if r.Reason != want || r.DriverVersion != 0 || r.Usable() {
		t.Errorf("Probe = %+v, want reason %q", r, want)
	}
	sel, err := Open("auto", opts)
	if err != nil || sel.Spec.Kind != Sim || sel.Fallback != want {
		t.Errorf("auto = %+v, %v", sel, err)
	}
	if _, err := Open("cuda:1", opts); err == nil || err.Error() != "device cuda:1: "+want || !errors.Is(err, cuda.ErrNoLibrary) {
		t.Errorf("cuda:1: %v", err)
	}
	t.Setenv(cuda.LibraryEnv, lib)
	if Available() || Count() != 0 {
		t.Error("Available() without a library")
	}
}

type stubSim struct{ executor.Device }

func TestOpenSimAndRef(t *testing.T) {
	sel, err := Open("ref", Options{})
	if err != nil || sel.Spec.Kind != Ref || sel.Device != nil {
		t.Errorf("ref = %+v, %v", sel, err)
	}
	sel, err = Open("sim", Options{})
	if err != nil || sel.Spec.Kind != Sim || sel.Fallback != "" {
		t.Fatalf("sim = %+v, %v", sel, err)
	}
	if _, ok := sel.Device.(*simdev.Device); !ok {
		t.Errorf("sim opened %T", sel.Device)
	}
	stub := &stubSim{}
	sel, err = Open("sim", Options{Sim: func() (executor.Device, error) { return stub, nil }})
	if err != nil || sel.Device != stub {
		t.Errorf("sim with Options.Sim = %+v, %v", sel, err)
	}
	_, err = Open("sim", Options{Sim: func() (executor.Device, error) { return nil, errors.New("broken") }})
	if err == nil || err.Error() != "device sim: broken" {
		t.Errorf("failing Options.Sim: %v", err)
	}
	if _, err := Open("tpu", Options{}); err == nil || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("tpu: %v", err)
	}
}

func TestFormatVersion(t *testing.T) {
	for v, want := range map[int]string{12020: "12.2", 11080: "11.8", 12000: "12.0", 13010: "13.1"} {
		if got := FormatVersion(v); got != want {
			t.Errorf("FormatVersion(%d) = %q, want %q", v, got, want)
		}
	}
}

// FuzzParse: Parse never panics, and an accepted name's canonical form
// parses to the same Spec.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"auto", "cuda", "cuda:0", "cuda:12", "sim", "ref", "cuda:", "cuda:-1", "cuda:007", "cuda:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		spec, err := Parse(name)
		if err != nil {
			return
		}
		again, err := Parse(spec.String())
		if err != nil || again != spec {
			t.Errorf("Parse(%q) = %v, but Parse(%q) = %v, %v", name, spec, spec.String(), again, err)
		}
	})
}

// oldGPU is the simulator-backed driver posing as a GPU of compute capability 7.5.
type oldGPU struct{ *simdriver.Driver }

func (o oldGPU) DeviceGetAttribute(a cuda.Attribute, h cuda.DeviceHandle) (int, error) {
	switch a {
	case cuda.AttrComputeCapabilityMajor:
		return 7, nil
	case cuda.AttrComputeCapabilityMinor:
		return 5, nil
	}
	return o.Driver.DeviceGetAttribute(a, h)
}

// auto takes the first GPU gcomp's kernels run on, and passes over older ones, saying why.
func TestAutoArch(t *testing.T) {
	sel, err := Open("auto", Options{Driver: simdriver.New()})
	if err != nil || sel.Spec.String() != "cuda:0" || sel.Fallback != "" {
		t.Fatalf("auto over an sm_90 GPU = %+v, %v", sel, err)
	}
	sel.Device.Close()
	sel, err = Open("auto", Options{Driver: oldGPU{simdriver.New()}})
	want := "no GPU initialized: cuda:0 (PTX simulator, sm_75) has compute capability 7.5; gcomp's kernels need 8.0 or newer"
	if err != nil || sel.Spec.Kind != Sim || sel.Fallback != want {
		t.Fatalf("auto over an sm_75 GPU = %+v, %v; want the simulator and %q", sel, err, want)
	}
	sel.Device.Close()
}
