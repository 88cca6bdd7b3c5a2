package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/cudatest"
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
