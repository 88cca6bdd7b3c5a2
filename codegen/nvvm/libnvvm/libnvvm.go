package libnvvm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// Env names the library to load when no path is given explicitly.
const Env = "GCOMP_NVVM_LIB"

// debianPath is where Debian's libnvvm4 package installs the library.
const debianPath = "/usr/lib/x86_64-linux-gnu/libnvvm.so.4"

// cacheRel is where scripts/fetch-cuda-tools.sh --nvvm unpacks the library, relative to the
// module root.
const cacheRel = ".cache/nvvm/usr/lib/x86_64-linux-gnu/libnvvm.so.4"

// ErrNoLibrary is wrapped by Load's error when no candidate could be opened.
var ErrNoLibrary = errors.New("libNVVM not found")

// Candidates lists, in order, the paths Load tries for explicit (which may be empty).
func Candidates(explicit string) []string {
	if p := dynlib.Path(explicit, Env, ""); p != "" {
		return []string{p}
	}
	var c []string
	for _, home := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if home != "" {
			c = append(c, filepath.Join(home, "nvvm", "lib64", "libnvvm.so"))
		}
	}
	c = append(c, debianPath)
	// .cache/nvvm at or above the working directory, or above the executable (bin/gcomp).
	var starts []string
	if dir, err := os.Getwd(); err == nil {
		starts = append(starts, dir)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		if p := findUp(dir, cacheRel); p != "" && !slices.Contains(c, p) {
			c = append(c, p)
		}
	}
	return c
}

// findUp returns rel under the first directory at or above dir that holds it, stopping at the
// one holding go.mod; "" if none does.
func findUp(dir, rel string) string {
	for {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Lib is a loaded libNVVM.
type Lib struct {
	Path string

	nvvmVersion            func(major, minor *int32) int32
	nvvmIRVersion          func(maj, min, dmaj, dmin *int32) int32
	nvvmCreateProgram      func(p *uintptr) int32
	nvvmDestroyProgram     func(p *uintptr) int32
	nvvmAddModuleToProgram func(p uintptr, buf *byte, size uintptr, name *byte) int32
	// nvvmLazyAddModuleToProgram links only what the other modules use (CUDA 11.4 and newer;
	// nil before).
	nvvmLazyAddModuleToProgram func(p uintptr, buf *byte, size uintptr, name *byte) int32
	nvvmCompileProgram         func(p uintptr, n int32, opts **byte) int32
	nvvmGetCompiledResultSize  func(p uintptr, size *uintptr) int32
	nvvmGetCompiledResult      func(p uintptr, buf *byte) int32
	nvvmGetProgramLogSize      func(p uintptr, size *uintptr) int32
	nvvmGetProgramLog          func(p uintptr, buf *byte) int32
}

var loaded dynlib.Cache[*Lib] // by the path given to dlopen

// Load opens the first of Candidates(explicit) that loads and resolves every entry point. A
// library is opened once per process and path.
func Load(explicit string) (*Lib, error) {
	if err := dynlib.Unavailable("libNVVM"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoLibrary, err)
	}
	var tried []string
	for _, p := range Candidates(explicit) {
		l, err := loaded.Get(p, func() (*Lib, error) { return open(p) })
		if err == nil {
			return l, nil
		}
		tried = append(tried, "  "+err.Error())
	}
	return nil, fmt.Errorf("%w; tried:\n%s\ninstall it with scripts/fetch-cuda-tools.sh --nvvm (Debian's non-free libnvvm4), install the CUDA toolkit, or name the library with --nvvm-lib or $%s",
		ErrNoLibrary, strings.Join(tried, "\n"), Env)
}

func open(path string) (*Lib, error) {
	l := &Lib{Path: path}
	err := dynlib.Open(path, dynlib.Spec{
		Local: true,
		Required: []dynlib.Func{
			{Name: "nvvmVersion", Ptr: &l.nvvmVersion},
			{Name: "nvvmIRVersion", Ptr: &l.nvvmIRVersion},
			{Name: "nvvmCreateProgram", Ptr: &l.nvvmCreateProgram},
			{Name: "nvvmDestroyProgram", Ptr: &l.nvvmDestroyProgram},
			{Name: "nvvmAddModuleToProgram", Ptr: &l.nvvmAddModuleToProgram},
			{Name: "nvvmCompileProgram", Ptr: &l.nvvmCompileProgram},
			{Name: "nvvmGetCompiledResultSize", Ptr: &l.nvvmGetCompiledResultSize},
			{Name: "nvvmGetCompiledResult", Ptr: &l.nvvmGetCompiledResult},
			{Name: "nvvmGetProgramLogSize", Ptr: &l.nvvmGetProgramLogSize},
			{Name: "nvvmGetProgramLog", Ptr: &l.nvvmGetProgramLog},
		},
		Lacks: func(sym string) error {
			return fmt.Errorf("%s: lacks %s (not a libNVVM of CUDA 11 or newer)", path, sym)
		},
		Optional: [][]dynlib.Func{{{Name: "nvvmLazyAddModuleToProgram", Ptr: &l.nvvmLazyAddModuleToProgram}}},
	})
	switch {
	case err == nil:
		return l, nil
	case strings.Contains(err.Error(), path):
		return nil, err
	}
	return nil, fmt.Errorf("%s: %v", path, err)
}

// resultNames are nvvmResult's values, as nvvm.h names them.
var resultNames = []string{
	"NVVM_SUCCESS", "NVVM_ERROR_OUT_OF_MEMORY", "NVVM_ERROR_PROGRAM_CREATION_FAILURE",
	"NVVM_ERROR_IR_VERSION_MISMATCH", "NVVM_ERROR_INVALID_INPUT", "NVVM_ERROR_INVALID_PROGRAM",
	"NVVM_ERROR_INVALID_IR", "NVVM_ERROR_INVALID_OPTION", "NVVM_ERROR_NO_MODULE_IN_PROGRAM",
	"NVVM_ERROR_COMPILATION", "NVVM_ERROR_CANCELLED",
}

func resultName(r int32) string {
	if r >= 0 && int(r) < len(resultNames) {
		return resultNames[r]
	}
	return fmt.Sprintf("nvvmResult %d", r)
}

// Version is libNVVM's own version (e.g. 1.x for CUDA 11; 2.x for CUDA 12).
func (l *Lib) Version() (major, minor int, err error) {
	var a, b int32
	if r := l.nvvmVersion(&a, &b); r != 0 {
		return 0, 0, fmt.Errorf("nvvmVersion: %s", resultName(r))
	}
	return int(a), int(b), nil
}

// IRVersion is the NVVM IR version the library reads (the !nvvmir.version a module declares)
// and its debug-metadata version.
func (l *Lib) IRVersion() (major, minor, dbgMajor, dbgMinor int, err error) {
	var a, b, c, d int32
	if r := l.nvvmIRVersion(&a, &b, &c, &d); r != 0 {
		return 0, 0, 0, 0, fmt.Errorf("nvvmIRVersion: %s", resultName(r))
	}
	return int(a), int(b), int(c), int(d), nil
}

// Module is one input of a compilation: NVVM IR text or bitcode. A Lazy module (libdevice)
// contributes only the functions the others call.
type Module struct {
	Name string
	Data []byte
	Lazy bool
}

// Compile compiles NVVM IR modules, linked into one program, to PTX with the given options
// (such as "-arch=compute_80"). name labels the compilation in errors (the kernel's name): a
// failure returns an error starting with it and holding libNVVM's log. The log of a success
// (warnings) is returned too.
func (l *Lib) Compile(name string, modules []Module, options ...string) (ptx []byte, log string, err error) {
	// libNVVM's API is thread safe (its documentation's "Thread Safety", CUDA 11 on): programs
	// compile in parallel.
	var prog uintptr
	if r := l.nvvmCreateProgram(&prog); r != 0 {
		return nil, "", fmt.Errorf("%s: nvvmCreateProgram: %s", name, resultName(r))
	}
	defer l.nvvmDestroyProgram(&prog)
	for _, m := range modules {
		add, how := l.nvvmAddModuleToProgram, "nvvmAddModuleToProgram"
		if m.Lazy && l.nvvmLazyAddModuleToProgram != nil {
			add, how = l.nvvmLazyAddModuleToProgram, "nvvmLazyAddModuleToProgram"
		}
		buf := append(append([]byte(nil), m.Data...), 0) // NUL-terminated too, for older libraries
		cname := cstr(m.Name)
		r := add(prog, &buf[0], uintptr(len(m.Data)), &cname[0])
		runtime.KeepAlive(buf)
		runtime.KeepAlive(cname)
		if r != 0 {
			log := l.log(prog)
			return nil, log, fmt.Errorf("%s: %s(%s): %s%s", name, how, m.Name, resultName(r), indent(log))
		}
	}
	copts := make([][]byte, len(options))
	ptrs := make([]*byte, len(options)+1)
	for i, o := range options {
		copts[i] = cstr(o)
		ptrs[i] = &copts[i][0]
	}
	r := l.nvvmCompileProgram(prog, int32(len(options)), &ptrs[0])
	runtime.KeepAlive(copts)
	runtime.KeepAlive(ptrs)
	log = l.log(prog)
	if r != 0 {
		return nil, log, fmt.Errorf("%s: libNVVM: %s%s", name, resultName(r), indent(log))
	}
	var size uintptr
	if r := l.nvvmGetCompiledResultSize(prog, &size); r != 0 {
		return nil, log, fmt.Errorf("%s: nvvmGetCompiledResultSize: %s", name, resultName(r))
	}
	out := make([]byte, size+1)
	if r := l.nvvmGetCompiledResult(prog, &out[0]); r != 0 {
		return nil, log, fmt.Errorf("%s: nvvmGetCompiledResult: %s", name, resultName(r))
	}
	return cString(out), log, nil
}

func (l *Lib) log(prog uintptr) string {
	var size uintptr
	if l.nvvmGetProgramLogSize(prog, &size) != 0 || size <= 1 {
		return ""
	}
	b := make([]byte, size+1)
	if l.nvvmGetProgramLog(prog, &b[0]) != 0 {
		return ""
	}
	return strings.TrimSpace(string(cString(b)))
}

func indent(log string) string {
	if log == "" {
		return ""
	}
	return "\n\t" + strings.ReplaceAll(log, "\n", "\n\t")
}

func cstr(s string) []byte { return append([]byte(s), 0) }

func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return b
}
