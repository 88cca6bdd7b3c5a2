package nvrtc

import (
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// Compiler is a loaded NVRTC library. It is safe for concurrent use.
type Compiler struct {
	Path         string // the libnvrtc that was loaded
	Major, Minor int    // NVRTC's version

	nvrtcVersion           func(major, minor *int32) int32
	nvrtcCreateProgram     func(prog *uintptr, src, name string, nHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(prog uintptr, nOpts int32, opts unsafe.Pointer) int32
	nvrtcGetPTXSize        func(prog uintptr, n *uint64) int32
	nvrtcGetPTX            func(prog uintptr, ptx *byte) int32
	nvrtcGetProgramLogSize func(prog uintptr, n *uint64) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
	nvrtcGetErrorString    func(r int32) string

	mu    sync.Mutex
	cache map[cacheKey]result
}

type cacheKey struct {
	hash       [32]byte
	name, arch string
}

type result struct {
	ptx string
	err error
}

var opened dynlib.Cache[*Compiler] // by the lib argument of Open

// Open loads NVRTC from the first of Candidates(lib) that loads, after its
// builtins library. A library is opened once per process. Without one the
// error wraps ErrNoLibrary, lists where it looked and says how to install it.
func Open(lib string) (*Compiler, error) {
	key := lib
	if key == "" {
		key = "\x00" + os.Getenv(LibraryEnv)
	}
	return opened.Get(key, func() (*Compiler, error) { return find(lib) })
}

// find loads the first of Candidates(lib) that loads.
func find(lib string) (*Compiler, error) {
	if err := dynlib.Unavailable("NVRTC"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoLibrary, err)
	}
	tried := Candidates(lib)
	why := make([]string, len(tried))
	for i, p := range tried {
		if lib == "" && os.Getenv(LibraryEnv) == "" {
			if _, err := os.Stat(p); err != nil {
				why[i] = "not there"
				continue
			}
		}
		c, err := load(p)
		if err != nil {
			why[i] = err.Error()
			continue
		}
		return c, nil
	}
	return nil, notFound(tried, why)
}

// load opens the library at path, with its builtins library first.
func load(path string) (*Compiler, error) {
	if b := builtinsFor(path); b != "" {
		if err := dynlib.Open(b, dynlib.Spec{}); err != nil {
			return nil, fmt.Errorf("its builtins library: %v", err)
		}
	}
	c := &Compiler{Path: path, cache: map[cacheKey]result{}}
	err := dynlib.Open(path, dynlib.Spec{
		Required: []dynlib.Func{
			{Name: "nvrtcVersion", Ptr: &c.nvrtcVersion},
			{Name: "nvrtcCreateProgram", Ptr: &c.nvrtcCreateProgram},
			{Name: "nvrtcCompileProgram", Ptr: &c.nvrtcCompileProgram},
			{Name: "nvrtcGetPTXSize", Ptr: &c.nvrtcGetPTXSize},
			{Name: "nvrtcGetPTX", Ptr: &c.nvrtcGetPTX},
			{Name: "nvrtcGetProgramLogSize", Ptr: &c.nvrtcGetProgramLogSize},
			{Name: "nvrtcGetProgramLog", Ptr: &c.nvrtcGetProgramLog},
			{Name: "nvrtcDestroyProgram", Ptr: &c.nvrtcDestroyProgram},
			{Name: "nvrtcGetErrorString", Ptr: &c.nvrtcGetErrorString},
		},
		Lacks: func(sym string) error { return fmt.Errorf("lacks %s (not an NVRTC library?)", sym) },
	})
	if err != nil {
		return nil, err
	}
	var major, minor int32
	if r := c.nvrtcVersion(&major, &minor); r != 0 {
		return nil, c.err("nvrtcVersion", r)
	}
	c.Major, c.Minor = int(major), int(minor)
	return c, nil
}

func (c *Compiler) err(call string, r int32) error {
	return fmt.Errorf("nvrtc: %s: %s (%d)", call, c.nvrtcGetErrorString(r), r)
}

// Compile compiles the CUDA C src (named name in messages and .file
// directives) to PTX for arch, a virtual architecture such as "compute_80".
// The PTX carries line information. A source that does not compile gives a
// *CompileError holding NVRTC's log. Results, errors included, are cached
// per process by (source hash, name, arch).
func (c *Compiler) Compile(src, name, arch string) (string, error) {
	k := cacheKey{sha256.Sum256([]byte(src)), name, arch}
	c.mu.Lock()
	r, ok := c.cache[k]
	c.mu.Unlock()
	if ok {
		return r.ptx, r.err
	}
	r.ptx, r.err = c.compile(src, name, arch)
	c.mu.Lock()
	c.cache[k] = r
	c.mu.Unlock()
	return r.ptx, r.err
}

// Compiles counts the distinct compilations done so far (cache misses).
func (c *Compiler) Compiles() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cache)
}

func (c *Compiler) compile(src, name, arch string) (string, error) {
	if strings.IndexByte(src, 0) >= 0 || strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("nvrtc: %s: the source holds a NUL byte", name)
	}
	var prog uintptr
	if r := c.nvrtcCreateProgram(&prog, src, name, 0, nil, nil); r != 0 {
		return "", c.err("nvrtcCreateProgram", r)
	}
	defer c.nvrtcDestroyProgram(&prog)

	opts := []string{"--gpu-architecture=" + arch, "-lineinfo"}
	cstr := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts))
	for i, o := range opts {
		cstr[i] = append([]byte(o), 0)
		ptrs[i] = &cstr[i][0]
	}
	rc := c.nvrtcCompileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0]))
	runtime.KeepAlive(cstr)
	runtime.KeepAlive(ptrs)
	log, err := c.log(prog)
	if err != nil {
		return "", err
	}
	if rc != 0 {
		return "", &CompileError{Name: name, Log: log, Lines: Errors(log)}
	}
	var n uint64
	if r := c.nvrtcGetPTXSize(prog, &n); r != 0 {
		return "", c.err("nvrtcGetPTXSize", r)
	}
	if n == 0 {
		return "", fmt.Errorf("nvrtc: %s: empty PTX", name)
	}
	buf := make([]byte, n)
	if r := c.nvrtcGetPTX(prog, &buf[0]); r != 0 {
		return "", c.err("nvrtcGetPTX", r)
	}
	return relativeFiles(strings.TrimRight(string(buf), "\x00"), name), nil
}

// relativeFiles rewrites the .file directives NVRTC writes with the working
// directory prepended to name, or to the name of a #line directive (the
// headers gcomp inlines), back to the bare name, so the PTX is the same on
// every machine and in every directory.
func relativeFiles(ptx, name string) string {
	cwd, _ := os.Getwd()
	re := regexp.MustCompile(`(?m)^(\s*\.file\s+\d+\s+)"([^"\n]*)"`)
	return re.ReplaceAllStringFunc(ptx, func(m string) string {
		sm := re.FindStringSubmatch(m)
		switch {
		case strings.HasSuffix(sm[2], "/"+name):
			return sm[1] + strconv.Quote(name)
		case cwd != "" && strings.HasPrefix(sm[2], strings.TrimSuffix(cwd, "/")+"/"):
			return sm[1] + strconv.Quote(sm[2][len(strings.TrimSuffix(cwd, "/"))+1:])
		}
		return m
	})
}

func (c *Compiler) log(prog uintptr) (string, error) {
	var n uint64
	if r := c.nvrtcGetProgramLogSize(prog, &n); r != 0 {
		return "", c.err("nvrtcGetProgramLogSize", r)
	}
	if n <= 1 {
		return "", nil
	}
	buf := make([]byte, n)
	if r := c.nvrtcGetProgramLog(prog, &buf[0]); r != 0 {
		return "", c.err("nvrtcGetProgramLog", r)
	}
	return strings.TrimRight(string(buf), "\x00\n"), nil
}

// CompileError is a source NVRTC refused.
type CompileError struct {
	Name  string   // the source's name
	Log   string   // NVRTC's whole log
	Lines []string // its errors as "name:LINE: error: message"
}

func (e *CompileError) Error() string {
	if len(e.Lines) > 0 {
		return strings.Join(e.Lines, "\n")
	}
	return e.Name + ": " + e.Log
}

// reDiag matches NVRTC's diagnostic lines: `swish.cu(3): error: ...`.
var reDiag = regexp.MustCompile(`(?m)^(.+)\((\d+)\): (error|catastrophic error|warning): (.*)$`)

// Errors returns the error lines of an NVRTC log, as "file:LINE: error: message".
func Errors(log string) []string {
	var out []string
	for _, m := range reDiag.FindAllStringSubmatch(log, -1) {
		if m[3] == "warning" {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%s: %s: %s", m[1], m[2], m[3], m[4]))
	}
	return out
}
