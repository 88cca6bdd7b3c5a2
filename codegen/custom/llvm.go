package custom

import (
	"fmt"
	"regexp"
	"strings"
)

// A module that is NVVM IR (gcomp build --emit nvvm) cannot hold PTX text as it is: the custom
// kernels join it as module-level inline assembly, which LLVM (llc, libNVVM) copies into the PTX
// it writes, so the .ll stays valid IR (llvm-as reads it) and compiles to the whole module.

var (
	reLLVMTriple = regexp.MustCompile(`(?m)^target triple\s*=`)
	reLLVMSymbol = regexp.MustCompile(`(?m)^(?:(?:define|declare)\b[^@\n]*@|@)"?([A-Za-z_$.][\w$.]*)"?`)
)

// isLLVM reports whether module is LLVM IR text rather than PTX.
func isLLVM(module string) bool {
	return reLLVMTriple.MatchString(module) && headerVersion(module) == ""
}

// llvmSymbols are the global names an LLVM IR module defines or declares.
func llvmSymbols(module string) []string {
	var out []string
	for _, m := range reLLVMSymbol.FindAllStringSubmatch(module, -1) {
		out = append(out, m[1])
	}
	return out
}

// writeModuleAsm appends a unit's PTX body to b as `module asm` lines, after a comment that says
// what it is and the PTX ISA it needs.
func writeModuleAsm(b *strings.Builder, u *Unit, body, version string) {
	fmt.Fprintf(b, "\n; custom op %s (%s): its PTX (ISA %s), as module-level inline assembly\n", u.Name, oneLine(u.File), version)
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		fmt.Fprintf(b, "module asm \"%s\"\n", llvmEscape(strings.TrimRight(line, "\r")))
	}
}

// llvmEscape escapes s for an LLVM IR string: a quote, a backslash and a control byte other
// than a tab become \XX.
func llvmEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' || c < 0x20 && c != '\t' || c == 0x7f {
			fmt.Fprintf(&b, "\\%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// oneLine keeps a name read from a model on the comment's line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
