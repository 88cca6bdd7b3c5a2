package libnvvm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LibdeviceEnv names libdevice.10.bc when it is not where Libdevice looks.
const LibdeviceEnv = "GCOMP_LIBDEVICE"

// Libdevice finds NVIDIA's libdevice.10.bc (the math library NVVM IR calls, __nv_expf and
// friends): $GCOMP_LIBDEVICE, next to the loaded libNVVM in the toolkit's layout
// (nvvm/lib64/../libdevice), the CUDA toolkit, Debian's nvidia-cuda-toolkit, and .cache/cuda at
// or above the working directory (scripts/fetch-cuda-tools.sh unpacks it there with ptxas).
func (l *Lib) Libdevice() (string, error) {
	if p := os.Getenv(LibdeviceEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %v", LibdeviceEnv, err)
		}
		return p, nil
	}
	const file = "libdevice.10.bc"
	cands := []string{filepath.Join(filepath.Dir(filepath.Dir(l.Path)), "libdevice", file)}
	for _, home := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if home != "" {
			cands = append(cands, filepath.Join(home, "nvvm", "libdevice", file))
		}
	}
	cands = append(cands, "/usr/lib/nvidia-cuda-toolkit/libdevice/"+file)
	if dir, err := os.Getwd(); err == nil {
		if p := findUp(dir, ".cache/cuda/usr/lib/nvidia-cuda-toolkit/libdevice/"+file); p != "" {
			cands = append(cands, p)
		}
	}
	if exe, err := os.Executable(); err == nil {
		if p := findUp(filepath.Dir(exe), ".cache/cuda/usr/lib/nvidia-cuda-toolkit/libdevice/"+file); p != "" {
			cands = append(cands, p)
		}
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return c, nil
		}
	}
	return "", fmt.Errorf("libdevice.10.bc not found; tried:\n  %s\nfetch it with scripts/fetch-cuda-tools.sh (Debian's nvidia-cuda-toolkit), install the CUDA toolkit, or name it with $%s",
		strings.Join(cands, "\n  "), LibdeviceEnv)
}
