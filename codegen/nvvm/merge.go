package nvvm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/codegen/plan"
)

// Kernels compiled by separate libNVVM programs (parallel.go) come back as separate PTX modules;
// mergePTX joins them into one. Each module is its header (.version, .target, .address_size)
// and top-level items: entries, .func declarations and definitions (libdevice's slow paths that
// were not inlined) and module-scope variables (libdevice's tables, the kernels' constant
// arrays). The merged module has the first header and every item once: an item that another
// module already brought with the same text is dropped; one whose name is taken by a different
// text (an internal function specialized differently in two programs) is renamed in its module
// first. Entries are named after their kernels and never collide.

// ptxItem is one top-level item of a PTX module with the comment and blank lines before it.
type ptxItem struct {
	text string
	code string // text without comments: what two modules must agree on
	key  string // what it declares: "entry NAME", "func NAME", "funcdecl NAME", "var NAME"
	name string
}

var (
	entryName = regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)`)
	funcName  = regexp.MustCompile(`\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)`)
	varName   = regexp.MustCompile(`^\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)?\.(?:global|const|shared)\s+(?:\.\w+\s+(?:\d+\s+)?)*?([A-Za-z_$][\w$]*)\s*(?:\[|=|;)`)
)

// splitPTX splits a libNVVM module into its header (up to and including .address_size) and its
// items.
func splitPTX(text string) (header string, items []ptxItem, err error) {
	lines := strings.SplitAfter(text, "\n")
	i := 0
	for ; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), ".address_size") {
			break
		}
	}
	if i == len(lines) {
		return "", nil, fmt.Errorf("libNVVM's PTX has no .address_size")
	}
	header = strings.Join(lines[:i+1], "")
	var cur strings.Builder
	depth, code := 0, false
	for _, l := range lines[i+1:] {
		cur.WriteString(l)
		t := strings.TrimSpace(l)
		if depth == 0 && (t == "" || strings.HasPrefix(t, "//")) {
			continue // belongs to the next item
		}
		code = true
		depth += strings.Count(l, "{") - strings.Count(l, "}")
		if depth == 0 && (strings.HasSuffix(t, ";") || strings.HasSuffix(t, "}")) {
			it, err := classify(cur.String())
			if err != nil {
				return "", nil, err
			}
			items = append(items, it)
			cur.Reset()
			code = false
		}
	}
	if depth != 0 || code {
		return "", nil, fmt.Errorf("libNVVM's PTX ends inside an item")
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		items = append(items, ptxItem{text: cur.String(), key: "trailer"}) // comments only
	}
	return header, items, nil
}

func classify(text string) (ptxItem, error) {
	code := commentLine.ReplaceAllString(text, "")
	first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(code), "\n", 2)[0])
	switch {
	case strings.Contains(first, ".entry"):
		if m := entryName.FindStringSubmatch(code); m != nil {
			return ptxItem{text: text, code: code, key: "entry " + m[1], name: m[1]}, nil
		}
	case strings.Contains(first, ".func"):
		if m := funcName.FindStringSubmatch(code); m != nil {
			kind := "funcdecl "
			if strings.Contains(code, "{") {
				kind = "func "
			}
			return ptxItem{text: text, code: code, key: kind + m[1], name: m[1]}, nil
		}
	default:
		if m := varName.FindStringSubmatch(first); m != nil {
			return ptxItem{text: text, code: code, key: "var " + m[1], name: m[1]}, nil
		}
	}
	return ptxItem{}, fmt.Errorf("libNVVM's PTX has a top-level item gcomp does not know: %q", first)
}

var commentLine = regexp.MustCompile(`(?m)^\s*//.*$`)

// mergePTX joins modules (in order) into one module.
func mergePTX(modules []string) (string, error) { return MergePTX(modules, nil) }

// MergePTX joins PTX modules (libNVVM's or codegen/ptx's, in order) into one, each item once
// (see above). keep, when not nil, says which entries to take: the functions and variables only
// dropped entries used are dropped with them.
func MergePTX(modules []string, keep func(entry string) bool) (string, error) {
	var out strings.Builder
	var kept []ptxItem
	dropped := false
	have := map[string]string{} // key → code kept
	for mi, text := range modules {
		header, items, err := splitPTX(text)
		if err != nil {
			return "", err
		}
		// Rename this module's items whose name another text took.
		renamed := false
		for _, it := range items {
			if prev, ok := have[it.key]; ok && prev != it.code && !strings.HasPrefix(it.key, "entry ") {
				text = renameSymbol(text, it.name, fmt.Sprintf("%s_m%d", it.name, mi))
				renamed = true
			}
		}
		if renamed {
			if header, items, err = splitPTX(text); err != nil {
				return "", err
			}
		}
		if mi == 0 {
			out.WriteString(header)
		} else {
			newerVersion(&out, header)
		}
		for _, it := range items {
			if strings.HasPrefix(it.key, "entry ") && keep != nil && !keep(it.name) {
				dropped = true
				continue
			}
			if prev, ok := have[it.key]; ok {
				if prev != it.code {
					return "", fmt.Errorf("two modules define %s differently", it.key)
				}
				continue
			}
			have[it.key] = it.code
			kept = append(kept, it)
		}
	}
	if dropped {
		kept = used(kept)
	}
	for _, it := range kept {
		out.WriteString(it.text)
	}
	return out.String(), nil
}

var versionLine = regexp.MustCompile(`(?m)^\.version (\d+)\.(\d+)$`)

// newerVersion raises the .version of the header written to out to header's when that is newer:
// codegen/ptx's fp8 kernels for sm_89 declare PTX ISA 8.1, libNVVM 11.8's modules 7.8.
func newerVersion(out *strings.Builder, header string) {
	m := versionLine.FindStringSubmatch(header)
	cur := versionLine.FindStringSubmatch(out.String())
	if m == nil || cur == nil {
		return
	}
	num := func(s []string) int {
		major, _ := strconv.Atoi(s[1])
		minor, _ := strconv.Atoi(s[2])
		return major*100 + minor
	}
	if num(m) > num(cur) {
		s := strings.Replace(out.String(), cur[0], m[0], 1)
		out.Reset()
		out.WriteString(s)
	}
}

// used drops the functions and variables of items that no other item refers to, until none is
// left to drop.
func used(items []ptxItem) []ptxItem {
	for {
		var next []ptxItem
		for i, it := range items {
			if it.key == "trailer" || strings.HasPrefix(it.key, "entry ") {
				next = append(next, it)
				continue
			}
			re := regexp.MustCompile(`(^|[^\w$])` + regexp.QuoteMeta(it.name) + `($|[^\w$])`)
			for j, other := range items {
				if j != i && other.name != it.name && re.MatchString(other.code) {
					next = append(next, it)
					break
				}
			}
		}
		if len(next) == len(items) {
			return next
		}
		items = next
	}
}

// renameSymbol replaces the identifier old by new wherever it is a whole PTX identifier.
func renameSymbol(text, old, new string) string {
	re := regexp.MustCompile(`(^|[^\w$])` + regexp.QuoteMeta(old) + `($|[^\w$])`)
	// Matches may touch (a(b)c): replace until stable.
	for {
		next := re.ReplaceAllString(text, "${1}"+new+"${2}")
		if next == text {
			return next
		}
		text = next
	}
}

// annotateUsers puts codegen/ptx's comment naming the kernels an entry runs for above each
// entry that several run.
func annotateUsers(text string, uniq []plan.Kernel, users [][]string) string {
	for c, k := range uniq {
		if len(users[c]) > 1 {
			head := ".visible .entry " + k.Name + "("
			text = strings.Replace(text, head, plan.UsersComment(k.Name, users[c])+head, 1)
		}
	}
	return text
}
