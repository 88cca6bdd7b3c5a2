package ptxas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Result is what ptxas -v reported for one assembly.
type Result struct {
	Arch    string
	Kernels []KernelInfo // entry functions, in the order ptxas compiled them
	Log     string       // the assembler's whole output
}

// KernelInfo is the resource usage of one entry function.
type KernelInfo struct {
	Name        string
	Registers   int // per thread
	SpillStores int // bytes
	SpillLoads  int // bytes
	SharedBytes int // static shared memory
	StackBytes  int // stack frame, per thread
}

// Kernel returns the kernel called name, or nil.
func (r *Result) Kernel(name string) *KernelInfo {
	for i := range r.Kernels {
		if r.Kernels[i].Name == name {
			return &r.Kernels[i]
		}
	}
	return nil
}

// cacheDirs are where scripts/fetch-cuda-tools.sh leaves ptxas, relative to
// the module root.
var cacheDirs = []string{".cache/cuda/usr/bin", ".cache/cuda/usr/lib/nvidia-cuda-toolkit/bin"}

// Find returns the path of the ptxas binary: $GCOMP_PTXAS if set, else
// .cache/cuda/... in the first directory at or above the working directory
// up to the one holding go.mod, else ptxas on PATH.
func Find() (string, error) {
	if p, ok, err := fromEnv("GCOMP_PTXAS"); ok {
		return p, err
	}
	if p, ok := inCache(cacheDirs); ok {
		return p, nil
	}
	p, err := exec.LookPath("ptxas")
	if err != nil {
		return "", errors.New("ptxas: not found in $GCOMP_PTXAS, .cache/cuda or PATH; run scripts/fetch-cuda-tools.sh")
	}
	return p, nil
}

// fromEnv returns the ptxas an environment variable names, if it is set.
func fromEnv(name string) (string, bool, error) {
	p := os.Getenv(name)
	if p == "" {
		return "", false, nil
	}
	if err := executable(p); err != nil {
		return "", true, fmt.Errorf("ptxas: %s: %w", name, err)
	}
	return p, true, nil
}

// inCache looks for ptxas in dirs (relative to the module root) in the first
// directory at or above the working directory up to the one holding go.mod.
func inCache(dirs []string) (string, bool) {
	if dir, err := os.Getwd(); err == nil {
		for {
			for _, c := range dirs {
				p := filepath.Join(dir, filepath.FromSlash(c), "ptxas")
				if executable(p) == nil {
					return p, true
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", false
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// timeout bounds one run of ptxas.
const timeout = 5 * time.Minute

// Assemble runs ptxas -arch=arch -v on ptx. On failure the error holds the
// assembler's error lines, each followed by the PTX line it names. PTX only
// CUDA 12's ptxas accepts (see Needs12) goes to that one (Find12).
func Assemble(ptx []byte, arch string) (*Result, error) {
	res, _, err := assemble(ptx, arch)
	return res, err
}

// Cubin assembles ptx for arch and returns the cubin (an ELF image cuModuleLoadData accepts).
func Cubin(ptx []byte, arch string) ([]byte, error) {
	_, cubin, err := assemble(ptx, arch)
	return cubin, err
}

func assemble(ptx []byte, arch string) (*Result, []byte, error) {
	find := Find
	if Needs12(ptx, arch) {
		find = Find12
	}
	bin, err := find()
	if err != nil {
		return nil, nil, err
	}
	return assembleWith(bin, ptx, arch)
}

func assembleWith(bin string, ptx []byte, arch string) (*Result, []byte, error) {
	dir, err := os.MkdirTemp("", "ptxas")
	if err != nil {
		return nil, nil, fmt.Errorf("ptxas: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "kernel.ptx"), ptx, 0o644); err != nil {
		return nil, nil, fmt.Errorf("ptxas: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-arch="+arch, "-v", "-o", "kernel.cubin", "kernel.ptx")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	runErr := cmd.Run()
	log := out.String()
	if runErr != nil {
		return nil, nil, fmt.Errorf("ptxas -arch=%s: %v\n%s", arch, runErr, explain(log, ptx))
	}
	cubin, err := os.ReadFile(filepath.Join(dir, "kernel.cubin"))
	if err != nil {
		return nil, nil, fmt.Errorf("ptxas: %w", err)
	}
	return &Result{Arch: arch, Log: log, Kernels: parseLog(log)}, cubin, nil
}

var lineRef = regexp.MustCompile(`, line (\d+); `)

// explain returns the error and warning lines of log, each followed by the
// PTX source line it refers to.
func explain(log string, ptx []byte) string {
	src := strings.Split(string(ptx), "\n")
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if strings.HasPrefix(l, "ptxas info") {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
		if m := lineRef.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= 1 && n <= len(src) {
				fmt.Fprintf(&b, "\t> %s\n", strings.TrimSpace(src[n-1]))
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

var (
	reEntry = regexp.MustCompile(`Compiling entry function '([^']+)' for '([^']+)'`)
	reProps = regexp.MustCompile(`Function properties for (\S+)`)
	reFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reUsed  = regexp.MustCompile(`Used (\d+) registers`)
	reSmem  = regexp.MustCompile(`(\d+) bytes smem`)
)

// parseLog reads the per-kernel lines of ptxas -v output:
//
//	ptxas info    : Compiling entry function 'add' for 'sm_80'
//	ptxas info    : Function properties for add
//	    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//	ptxas info    : Used 10 registers, 1024 bytes smem, 372 bytes cmem[0]
//
// Device functions get "Function properties" lines too; they are not kernels.
func parseLog(log string) []KernelInfo {
	var kernels []KernelInfo
	type frame struct{ stack, stores, loads int }
	frames := map[string]frame{}
	cur, props := -1, ""
	for _, l := range strings.Split(log, "\n") {
		if m := reEntry.FindStringSubmatch(l); m != nil {
			kernels = append(kernels, KernelInfo{Name: m[1]})
			cur = len(kernels) - 1
		} else if m := reProps.FindStringSubmatch(l); m != nil {
			props = m[1]
		} else if m := reFrame.FindStringSubmatch(l); m != nil && props != "" {
			frames[props] = frame{atoi(m[1]), atoi(m[2]), atoi(m[3])}
		} else if m := reUsed.FindStringSubmatch(l); m != nil && cur >= 0 {
			kernels[cur].Registers = atoi(m[1])
			if m := reSmem.FindStringSubmatch(l); m != nil {
				kernels[cur].SharedBytes = atoi(m[1])
			}
		}
	}
	for i := range kernels {
		f := frames[kernels[i].Name]
		kernels[i].StackBytes, kernels[i].SpillStores, kernels[i].SpillLoads = f.stack, f.stores, f.loads
	}
	return kernels
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
