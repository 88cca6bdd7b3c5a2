package ptxas

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// AssembleCubin is Assemble that also returns the cubin.
func AssembleCubin(ptx []byte, arch string) (*Result, []byte, error) {
	return assemble(ptx, arch)
}

var sassInst = regexp.MustCompile(`^\s+/\*[0-9a-f]{4}\*/\s+\S`)

// SASS counts each function's SASS instructions in a cubin, statically, as cuobjdump -sass
// lists them. cuobjdump is looked up beside ptxas (the same package ships both).
func SASS(cubin []byte) (map[string]int, error) {
	ops, err := SASSOps(cubin)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for fn, m := range ops {
		for _, n := range m {
			counts[fn] += n
		}
	}
	return counts, nil
}

// sassLine is one instruction of cuobjdump -sass: an optional predicate, then the opcode
// (its first dot-separated name is the mix's key: HMMA.16816.F32 counts as HMMA).
var sassLine = regexp.MustCompile(`^\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z0-9_]+)`)

// SASSOps is SASS by opcode: each function's static instruction mix.
func SASSOps(cubin []byte) (map[string]map[string]int, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	tool := filepath.Join(filepath.Dir(bin), "cuobjdump")
	if err := executable(tool); err != nil {
		return nil, fmt.Errorf("cuobjdump: %w", err)
	}
	dir, err := os.MkdirTemp("", "cuobjdump")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "m.cubin")
	if err := os.WriteFile(path, cubin, 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, "-sass", path).Output()
	if err != nil {
		return nil, fmt.Errorf("cuobjdump -sass: %v", err)
	}
	ops := map[string]map[string]int{}
	fn := ""
	for _, line := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(line), "Function : "); ok {
			fn = f
			ops[fn] = map[string]int{}
		} else if fn != "" && sassInst.MatchString(line) {
			op := "?"
			if m := sassLine.FindStringSubmatch(line); m != nil {
				op = m[1]
			}
			ops[fn][op]++
		}
	}
	return ops, nil
}
