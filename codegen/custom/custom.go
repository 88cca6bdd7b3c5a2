package custom

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Compiler compiles CUDA C to PTX (*nvrtc.Compiler is one).
type Compiler interface {
	Compile(src, name, arch string) (string, error)
}

// Unit is one custom op's code, ready to join a module.
type Unit struct {
	Name   string // the op's name, for messages
	Entry  string // the entry the source defines
	File   string // the source's file name
	Hash   string // the source's hash: units with equal Hash, Entry and SM share their code
	PTX    string // the compiled PTX, header included
	Params []Param
}

// Param is one .param of an entry.
type Param struct {
	Name string
	Type string // "u64", "f32", ...
}

// Error is a custom op that cannot be built; Pos is where the model declared it.
type Error struct {
	Pos, Name string
	Err       error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("custom op %q: %v", e.Name, e.Err)
	if e.Pos != "" {
		s = e.Pos + ": " + s
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Build compiles the custom op v for sm_<sm> and checks its entry's parameters against
// v's operands, result and scalars. c may be nil when v's source is PTX; for CUDA C a nil
// c is reported with why (the reason NVRTC could not be loaded).
func Build(v *ir.Value, c Compiler, why error, sm int) (*Unit, error) {
	a := v.Attrs
	u := &Unit{Name: a.String("name", ""), Entry: a.String("entry", ""), File: a.String("file", ""), Hash: a.String("hash", "")}
	fail := func(err error) (*Unit, error) { return nil, &Error{Pos: v.Pos, Name: u.Name, Err: err} }
	src := a.String("source", "")
	switch a.String("lang", "") {
	case "cuda":
		if c == nil {
			return fail(fmt.Errorf("its CUDA C needs NVRTC: %w", why))
		}
		ptx, err := c.Compile(src, u.File, fmt.Sprintf("compute_%d", sm))
		if err != nil {
			return fail(err)
		}
		u.PTX = ptx
	case "ptx":
		u.PTX = src
	default:
		return fail(fmt.Errorf("unknown lang %q", a.String("lang", "")))
	}
	if err := checkHeader(u.PTX, sm); err != nil {
		return fail(err)
	}
	params, err := entryParams(u.PTX, u.Entry)
	if err != nil {
		return fail(err)
	}
	u.Params = params
	if err := checkParams(v, params); err != nil {
		return fail(fmt.Errorf("entry %s: %v", u.Entry, err))
	}
	return u, nil
}

var (
	reEntry = regexp.MustCompile(`(?m)^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$%][\w$]*)\s*\(([^)]*)\)`)
	reParam = regexp.MustCompile(`^\.param\s+((?:\.\w+(?:\s+\d+)?\s+)*)([A-Za-z_$%][\w$]*)(\[\d*\])?$`)
)

// entryParams finds entry in ptx and returns its parameters.
func entryParams(ptx, entry string) ([]Param, error) {
	var names []string
	for _, m := range reEntry.FindAllStringSubmatch(ptx, -1) {
		names = append(names, m[1])
		if m[1] != entry {
			continue
		}
		var ps []Param
		for _, p := range strings.Split(m[2], ",") {
			p = strings.Join(strings.Fields(p), " ")
			if p == "" {
				continue
			}
			pm := reParam.FindStringSubmatch(p)
			if pm == nil {
				return nil, fmt.Errorf("entry %s: cannot read parameter %q", entry, p)
			}
			var typ string
			for _, q := range strings.Fields(pm[1]) {
				switch q = strings.TrimPrefix(q, "."); q {
				case "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "b8", "b16", "b32", "b64", "f16", "f32", "f64":
					typ = q
				}
			}
			if typ == "" {
				return nil, fmt.Errorf("entry %s: parameter %q has no type", entry, p)
			}
			if pm[3] != "" {
				typ += pm[3] // an array: a struct passed by value
			}
			ps = append(ps, Param{Name: pm[2], Type: typ})
		}
		return ps, nil
	}
	hint := ""
	for _, n := range names {
		if strings.HasPrefix(n, "_Z") && strings.Contains(n, entry) {
			hint = fmt.Sprintf(" (%s is C++-mangled: declare the kernel extern \"C\")", n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("missing entry %s: the source defines no kernel (__global__ function)%s", entry, hint)
	}
	return nil, fmt.Errorf("missing entry %s: the source defines %s%s", entry, strings.Join(names, ", "), hint)
}

// paramTypes are the PTX parameter types each argument may have.
var paramTypes = map[ir.DType][]string{
	ir.I32: {"u32", "s32", "b32"},
	ir.I64: {"u64", "s64", "b64"},
	ir.F32: {"f32", "b32"},
	ir.F64: {"f64", "b64"},
}

// checkParams checks that params are one 64-bit pointer per operand and one for the
// result, then one parameter per scalar of a matching type.
func checkParams(v *ir.Value, params []Param) error {
	st, err := ops.ScalarTypes(v.Attrs)
	if err != nil {
		return err
	}
	var want []string
	var types []ir.DType
	for i := range v.Args {
		want = append(want, fmt.Sprintf("operand %d (pointer)", i))
		types = append(types, ir.I64)
	}
	want = append(want, "the result (pointer)")
	types = append(types, ir.I64)
	for i, t := range st {
		want = append(want, fmt.Sprintf("scalar %d (%s)", i, t))
		types = append(types, t)
	}
	got := make([]string, len(params))
	for i, p := range params {
		got[i] = p.Type
	}
	if len(params) != len(types) {
		return fmt.Errorf("takes %d parameters (%s), the op passes %d: %s", len(params), strings.Join(got, ", "), len(types), strings.Join(want, ", "))
	}
	for i, p := range params {
		if !slices.Contains(paramTypes[types[i]], p.Type) {
			return fmt.Errorf("parameter %d (%s) is .%s, the op passes %s, which needs .%s", i, p.Name, p.Type, want[i], strings.Join(paramTypes[types[i]], " or ."))
		}
	}
	return nil
}

// Merge appends units to module (PTX with its own header), each distinct unit once, and
// returns the text and, per unit, the entry name it has in the module. A unit's header
// (.version, .target, .address_size) is dropped, the module's .version raised to the
// highest any unit needs, its .file directives renumbered after the module's, and its
// entry renamed (entry_1, entry_2, ...) when another symbol of the module has its name.
// Without units the module is returned as it is, unscanned: most models have no custom op,
// and their modules run to megabytes.
func Merge(module string, units []*Unit) (string, []string, error) {
	if len(units) == 0 {
		return module, []string{}, nil
	}
	taken := map[string]bool{}
	for _, m := range reSymbol.FindAllStringSubmatch(module, -1) {
		taken[m[1]] = true
	}
	llvm := isLLVM(module)
	if llvm {
		for _, s := range llvmSymbols(module) {
			taken[s] = true
		}
	}
	version := headerVersion(module)
	files := maxFile(module)
	entries := make([]string, len(units))
	done := map[string]string{} // unit key → entry in the module
	var b strings.Builder
	b.WriteString(module)
	for i, u := range units {
		key := u.Hash + "\x00" + u.Entry
		if e, ok := done[key]; ok {
			entries[i] = e
			continue
		}
		body, ver := stripHeader(u.PTX)
		if ver == "" {
			return "", nil, fmt.Errorf("custom op %q: its PTX has no .version", u.Name)
		}
		if newer(ver, version) {
			version = ver
		}
		entry := u.Entry
		for n := 1; taken[entry]; n++ {
			entry = fmt.Sprintf("%s_%d", u.Entry, n)
		}
		var syms []string
		for _, m := range reSymbol.FindAllStringSubmatch(body, -1) {
			if m[1] != u.Entry && taken[m[1]] {
				return "", nil, fmt.Errorf("custom op %q: its PTX declares %s, which the module already has (make helper functions static or give them other names)", u.Name, m[1])
			}
			syms = append(syms, m[1])
		}
		if entry != u.Entry {
			body = renameEntry(body, u.Entry, entry)
		}
		body, n := renumberFiles(body, files)
		files += n
		for _, s := range syms {
			taken[s] = true
		}
		taken[entry] = true
		done[key] = entry
		entries[i] = entry
		if llvm {
			writeModuleAsm(&b, u, body, ver)
			continue
		}
		fmt.Fprintf(&b, "\n// custom op %s (%s)\n%s\n", u.Name, u.File, strings.TrimSpace(body))
	}
	if llvm {
		return b.String(), entries, nil
	}
	text := reVersion.ReplaceAllString(b.String(), ".version "+version)
	return text, entries, nil
}

var (
	reVersion = regexp.MustCompile(`(?m)^\.version\s+(\d+\.\d+)`)
	reHeader  = regexp.MustCompile(`(?m)^\s*\.(version|target|address_size)\b.*$`)
	reSymbol  = regexp.MustCompile(`(?m)^\s*(?:\.(?:visible|weak|extern)\s+)?(?:\.entry|\.func(?:\s*\([^)]*\))?|\.(?:global|const|shared)(?:\s+\.[\w]+)*)\s+([A-Za-z_$%][\w$]*)`)
	reFile    = regexp.MustCompile(`(?m)^(\s*\.file\s+)(\d+)`)
	reLoc     = regexp.MustCompile(`(?m)^(\s*\.loc\s+)(\d+)`)
)

func headerVersion(ptx string) string {
	if m := reVersion.FindStringSubmatch(ptx); m != nil {
		return m[1]
	}
	return ""
}

func stripHeader(ptx string) (body, version string) {
	return reHeader.ReplaceAllString(ptx, ""), headerVersion(ptx)
}

// newer reports whether PTX version a is above b ("8.0" > "7.8").
func newer(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	if len(pa) != 2 || len(pb) != 2 {
		return b == ""
	}
	ma, _ := strconv.Atoi(pa[0])
	mb, _ := strconv.Atoi(pb[0])
	na, _ := strconv.Atoi(pa[1])
	nb, _ := strconv.Atoi(pb[1])
	return ma > mb || ma == mb && na > nb
}

func maxFile(ptx string) int {
	n := 0
	for _, m := range reFile.FindAllStringSubmatch(ptx, -1) {
		k, _ := strconv.Atoi(m[2])
		n = max(n, k)
	}
	return n
}

// renumberFiles adds off to the file numbers of body's .file and .loc directives and
// returns how many numbers body uses.
func renumberFiles(body string, off int) (string, int) {
	n := maxFile(body)
	if off == 0 || n == 0 {
		return body, n
	}
	shift := func(re *regexp.Regexp) {
		body = re.ReplaceAllStringFunc(body, func(s string) string {
			m := re.FindStringSubmatch(s)
			k, _ := strconv.Atoi(m[2])
			return m[1] + strconv.Itoa(k+off)
		})
	}
	shift(reFile)
	shift(reLoc)
	return body, n
}

// renameEntry renames the identifier from to to, outside .file directives (whose paths may
// contain it) and comments.
func renameEntry(body, from, to string) string {
	re := regexp.MustCompile(`(^|[^\w$%.])` + regexp.QuoteMeta(from) + `($|[^\w$])`)
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, ".file") {
			continue
		}
		if strings.HasPrefix(t, "//") {
			continue
		}
		// Replace repeatedly: adjacent matches share a delimiter.
		for {
			r := re.ReplaceAllString(l, "${1}"+to+"${2}")
			if r == l {
				break
			}
			l = r
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
