package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/cudatest"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/device"
)

func TestDevicesNoLibrary(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := cmdDevices([]string{"--cuda-lib", "/nonexistent/libcuda.so.1"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := `CUDA driver: none
sim  the PTX simulator (no GPU needed)
ref  the reference interpreter on the source graph
no usable GPU: no CUDA driver library (libcuda.so.1) found: /nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory
--device auto selects sim
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestDevicesNoGPU runs against NVIDIA's driver library without a GPU.
func TestDevicesNoGPU(t *testing.T) {
	lib := cudatest.Library(t)
	var out, errOut bytes.Buffer
	if err := cmdDevices([]string{"--cuda-lib", lib}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "cuda:0") {
		t.Skipf("this machine has a GPU:\n%s", out.String())
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "CUDA driver 1") || !strings.HasSuffix(lines[0], "("+lib+")") {
		t.Errorf("first line %q, want the driver version and library", lines[0])
	}
	want := "no usable GPU: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected)\n--device auto selects sim\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Errorf("output:\n%s\nwant it to end with:\n%s", out.String(), want)
	}
}

// TestWriteDevices prints a report of two GPUs, one unusable.
func TestWriteDevices(t *testing.T) {
	r := &device.Report{Library: "libcuda.so.1", DriverVersion: 12040, GPUs: []device.GPU{
		{Info: cuda.Info{Ordinal: 0, Name: "NVIDIA H100 80GB HBM3", Arch: cuda.Arch{Major: 9}, SMs: 132, TotalMem: 85 << 30}, FreeMem: 84 << 30},
		{Info: cuda.Info{Ordinal: 1, Name: "NVIDIA A100-SXM4-40GB", Arch: cuda.Arch{Major: 8}, SMs: 108, TotalMem: 40 << 30},
			Err: errors.New("cuda:1: creating a context: cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY: out of memory")},
	}}
	var out bytes.Buffer
	writeDevices(&out, r)
	want := `CUDA driver 12.4 (libcuda.so.1)
cuda:0  NVIDIA H100 80GB HBM3  sm_90  132 SMs, 85.0 GiB, 84.0 GiB free
cuda:1  NVIDIA A100-SXM4-40GB  sm_80  unusable: cuda:1: creating a context: cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY: out of memory
sim     the PTX simulator (no GPU needed)
ref     the reference interpreter on the source graph
--device auto selects cuda:0
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

func TestDevicesFlags(t *testing.T) {
	var out bytes.Buffer
	err := cmdDevices([]string{"extra"}, &out, &out)
	if err == nil || err.Error() != "gcomp devices: unexpected arguments: extra" {
		t.Errorf("extra argument: %v", err)
	}
	out.Reset()
	if err := cmdDevices([]string{"-h"}, &out, &out); !errors.Is(err, errHelp) || !strings.Contains(out.String(), "--cuda-lib") && !strings.Contains(out.String(), "-cuda-lib") {
		t.Errorf("-h: %v\n%s", err, out.String())
	}
}

// TestRunDevices runs one model on each compiled device the CLI can reach here and compares the
// outputs with the reference interpreter's: auto without a driver library falls back to the
// simulator and says why; cuda:0 runs the CUDA device's code over the simulator-backed driver,
// and its --bench table comes from CUDA events.
func TestRunDevices(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	run := func(t *testing.T, args ...string) (stdout, stderr string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(append([]string{"run", "model.go", "--input", "x=x.npy"}, args...), &out, &errOut); code != 0 {
			t.Fatalf("exit status %d: %s", code, errOut.String())
		}
		return out.String(), errOut.String()
	}
	run(t, "--device", "ref", "--output-dir", "ref")
	want, err := os.ReadFile("ref/y.npy")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		driver   cuda.Driver
		args     []string
		stderr   string // substring; "" means nothing beyond the random-weight note
		benchHdr string // substring of --bench's header
	}{
		{"auto without a driver", nil, []string{"--device", "auto", "--cuda-lib", "/nonexistent/libcuda.so.1"},
			"gcomp: no usable GPU (no CUDA driver library (libcuda.so.1) found: /nonexistent/libcuda.so.1", "on sim (PTX simulator)"},
		{"sim", nil, []string{"--device", "sim"}, "", "simulated time"},
		{"cuda:0 over the simulator", simdriver.New(), []string{"--device", "cuda:0"}, "", "on cuda:0 (PTX simulator, sm_90): 2 runs after 1 warm-up (runs replaying one CUDA graph"},
		{"without graphs", simdriver.New(), []string{"--device", "cuda:0", "--cuda-graphs=false"}, "", "on cuda:0 (PTX simulator, sm_90): 2 runs after 1 warm-up (kernel times from CUDA events)"},
		{"auto picks the GPU", simdriver.New(), []string{"--device", "auto"}, "", "CUDA graph"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testDriver = tc.driver
			defer func() { testDriver = nil }()
			dir := fmt.Sprintf("out%d", i)
			stdout, stderr := run(t, append(tc.args, "--output-dir", dir, "--bench", "2")...)
			if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tc.stderr)
			}
			if tc.stderr == "" && strings.Contains(stderr, "no usable GPU") {
				t.Errorf("stderr = %q, want no fallback", stderr)
			}
			if !strings.Contains(stdout, tc.benchHdr) || !strings.Contains(stdout, "per run (with copies)") {
				t.Errorf("bench output:\n%s\nwant it to contain %q and the per-run row", stdout, tc.benchHdr)
			}
			got, err := os.ReadFile(dir + "/y.npy")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("y.npy differs from the reference interpreter's")
			}
		})
	}
}

// TestRunNoGPU runs against NVIDIA's driver library without a GPU: cuda:0 is one clear error and
// auto falls back to the simulator, saying why.
func TestRunNoGPU(t *testing.T) {
	lib := cudatest.Library(t)
	if device.Probe(device.Options{CUDALib: lib}).Usable() {
		t.Skip("this machine has a GPU")
	}
	dir := fixture(t)
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	if code := Main([]string{"run", "model.go", "--device", "cuda:0", "--cuda-lib", lib, "--output-dir", "out"}, &out, &errOut); code != 1 {
		t.Fatalf("exit status %d, want 1: %s", code, errOut.String())
	}
	if want := "gcomp run: device cuda:0: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected)\n"; errOut.String() != want {
		t.Errorf("stderr = %q, want %q", errOut.String(), want)
	}
	if _, err := os.Stat("out"); err == nil {
		t.Errorf("a failed run created its output directory")
	}
	errOut.Reset()
	if code := Main([]string{"run", "model.go", "--device", "auto", "--cuda-lib", lib, "--output-dir", "out"}, &out, &errOut); code != 0 {
		t.Fatalf("exit status %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "gcomp: no usable GPU (no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE") {
		t.Errorf("stderr = %q", errOut.String())
	}
}
