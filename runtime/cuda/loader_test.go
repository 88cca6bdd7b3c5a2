package cuda

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda/cudatest"
)

// TestLoadRealLibrary loads NVIDIA's driver library (unpacked by
// scripts/fetch-cuda-tools.sh) on a machine without a GPU: every symbol
// resolves, the version is reported, and cuInit fails cleanly with "no
// CUDA device". On a machine with a GPU, Init succeeds instead.
func TestLoadRealLibrary(t *testing.T) {
	lib := cudatest.Library(t)
	drv, err := Load(lib)
	if err != nil {
		t.Fatal(err)
	}
	v, err := drv.DriverVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v < 11000 {
		t.Errorf("driver version %d, want CUDA 11 or newer", v)
	}
	t.Logf("driver version %d", v)
	if got := drv.GetErrorName(ResultOutOfMemory); got != "CUDA_ERROR_OUT_OF_MEMORY" {
		t.Errorf("GetErrorName(2) = %q", got)
	}
	if got := drv.GetErrorString(ResultNoDevice); got != "no CUDA-capable device is detected" {
		t.Errorf("GetErrorString(100) = %q", got)
	}
	err = drv.Init()
	if err == nil {
		t.Skip("this machine has a GPU: cuInit succeeded")
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Init: %v, want CUDA_ERROR_NO_DEVICE", err)
	}
	if want := "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"; err.Error() != want {
		t.Errorf("Init: %q, want %q", err, want)
	}
	// A second load of the same path returns the same driver.
	again, err := Load(lib)
	if err != nil || again != drv {
		t.Errorf("second Load = %v, %v", again, err)
	}
}

func TestLoadMissingLibrary(t *testing.T) {
	for _, tc := range []struct{ name, lib, env string }{
		{"explicit path", "/nonexistent/libcuda.so.1", ""},
		{"environment", "", "/nonexistent/from-env/libcuda.so.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(LibraryEnv, tc.env)
			_, err := Load(tc.lib)
			if !errors.Is(err, ErrNoLibrary) {
				t.Fatalf("Load: %v, want ErrNoLibrary", err)
			}
			want := "no CUDA driver library (libcuda.so.1) found: " + tc.lib + tc.env + ": cannot open shared object file"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Load: %q, want it to start with %q", err, want)
			}
		})
	}
}

func TestLibraryPath(t *testing.T) {
	t.Setenv(LibraryEnv, "")
	if got := LibraryPath(""); got != "libcuda.so.1" {
		t.Errorf("LibraryPath(\"\") = %q", got)
	}
	t.Setenv(LibraryEnv, "/opt/x/libcuda.so.1")
	if got := LibraryPath(""); got != "/opt/x/libcuda.so.1" {
		t.Errorf("with %s: LibraryPath(\"\") = %q", LibraryEnv, got)
	}
	if got := LibraryPath("/y/libcuda.so"); got != "/y/libcuda.so" {
		t.Errorf("explicit: LibraryPath = %q", got)
	}
}

// BenchmarkDriverCall measures one call into the driver library through
// purego (cuDriverGetVersion, which does no work of its own).
func BenchmarkDriverCall(b *testing.B) {
	drv, err := Load(cudatest.Library(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := drv.DriverVersion(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadMissingLibraryConcurrently is the regression test for an empty
// loader message: dlerror is per thread, and a goroutine that moved to
// another thread between dlopen and dlerror read nothing (it happened under
// the parallel tests of cmd/gcomp). Every failed Load, from goroutines
// competing for the processors, must carry the loader's message.
func TestLoadMissingLibraryConcurrently(t *testing.T) {
	const workers, loads = 8, 100
	errs := make(chan error, workers*loads)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range loads {
				_, err := Load(fmt.Sprintf("libgcomp-missing-%d-%d.so.1", w, i))
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	bad := 0
	for err := range errs {
		if err == nil || !strings.HasSuffix(err.Error(), ": cannot open shared object file: No such file or directory") {
			if bad++; bad <= 3 {
				t.Errorf("Load: %v", err)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d loads lacked the loader's message", bad, workers*loads)
	}
}
