package ptx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// regClass is a PTX register type with its name prefix. Generators ask for registers by class and
// the builder declares them all at the top of the entry, so no generator writes a .reg line.
type regClass int

const (
	rPred regClass = iota // %p: predicates
	rB16                  // %h: 16-bit (f16/bf16 memory images)
	rU32                  // %r: 32-bit integers
	rU64                  // %rd: 64-bit integers and addresses
	rF32                  // %f
	rF64                  // %fd
	numRegClasses
)

var regDecl = [numRegClasses]struct{ typ, prefix string }{
	rPred: {"pred", "%p"}, rB16: {"b16", "%h"}, rU32: {"b32", "%r"}, rU64: {"b64", "%rd"},
	rF32: {"f32", "%f"}, rF64: {"f64", "%fd"},
}

// builder accumulates one .entry: parameters, registers, shared arrays and the instruction list.
type builder struct {
	name    string
	comment []string // lines of the leading comment (the fused ops)
	params  []string // ".param .u64 name" lines
	shared  []string // ".shared" declarations inside the entry
	regs    [numRegClasses]int
	labels  int
	perf    string // performance directives between the parameter list and the body
	body    strings.Builder
	// defs is the arithmetic that computed each index register (ia.add, ia.mul), so two
	// registers can be known to hold the same coordinate (ia.same).
	defs map[string]string
}

func newBuilder(name string) *builder { return &builder{name: name} }

// reg returns a fresh register of class c.
func (b *builder) reg(c regClass) string {
	b.regs[c]++
	return regDecl[c].prefix + strconv.Itoa(b.regs[c])
}

// label returns a fresh label with a readable stem.
func (b *builder) label(stem string) string {
	b.labels++
	return fmt.Sprintf("$L_%s_%d", stem, b.labels)
}

// param declares a .param of PTX type typ and returns its name.
func (b *builder) param(typ, name string) string {
	b.params = append(b.params, fmt.Sprintf(".param .%s %s", typ, name))
	return name
}

// globalParam declares a .u64 parameter and returns a register holding it as a global address.
func (b *builder) globalParam(name string) string {
	p := b.param("u64", name)
	r := b.reg(rU64)
	b.ins("ld.param.u64", r, "["+p+"]")
	b.ins("cvta.to.global.u64", r, r)
	return r
}

// sharedArray declares a block-shared byte array and returns its name.
func (b *builder) sharedArray(name string, bytes, align int) string {
	b.shared = append(b.shared, fmt.Sprintf(".shared .align %d .b8 %s[%d];", align, name, bytes))
	return name
}

// ins emits one instruction: opcode followed by comma-separated operands.
func (b *builder) ins(opcode string, operands ...string) {
	b.body.WriteString("\t")
	b.body.WriteString(opcode)
	if len(operands) > 0 {
		b.body.WriteString(" ")
		b.body.WriteString(strings.Join(operands, ", "))
	}
	b.body.WriteString(";\n")
}

// guarded emits an instruction executed only where pred holds (pred may start with '!').
func (b *builder) guarded(pred, opcode string, operands ...string) {
	b.body.WriteString("\t@" + pred)
	b.ins(opcode, operands...)
}

// mark is the body's current end, for hoist.
func (b *builder) mark() int { return b.body.Len() }

// hoist moves what the body gained since mark m to its start.
func (b *builder) hoist(m int) {
	body := b.body.String()
	b.body.Reset()
	b.body.WriteString(body[m:])
	b.body.WriteString(body[:m])
}

// place puts a label at the current position.
func (b *builder) place(label string) { b.body.WriteString(label + ":\n") }

// note emits a comment line into the body.
func (b *builder) note(format string, args ...any) {
	b.body.WriteString("\t// " + fmt.Sprintf(format, args...) + "\n")
}

// bra jumps unconditionally; braIf jumps where pred holds.
func (b *builder) bra(label string)         { b.ins("bra.uni", label) }
func (b *builder) braIf(pred, label string) { b.guarded(pred, "bra", label) }

// text renders the entry.
func (b *builder) text() string {
	var s strings.Builder
	for _, c := range b.comment {
		s.WriteString("// " + c + "\n")
	}
	s.WriteString(".visible .entry " + b.name + "(")
	for i, p := range b.params {
		if i > 0 {
			s.WriteString(",")
		}
		s.WriteString("\n\t" + p)
	}
	s.WriteString("\n)\n")
	if b.perf != "" {
		s.WriteString(b.perf + "\n")
	}
	s.WriteString("{\n")
	for _, sh := range b.shared {
		s.WriteString("\t" + sh + "\n")
	}
	for c := range numRegClasses {
		if n := b.regs[c]; n > 0 {
			fmt.Fprintf(&s, "\t.reg .%s %s<%d>;\n", regDecl[c].typ, regDecl[c].prefix, n+1)
		}
	}
	s.WriteString(b.body.String())
	s.WriteString("\tret;\n}\n")
	return s.String()
}

// Immediates in PTX's exact hexadecimal forms, so a constant never goes through decimal rounding.
func immF32(f float64) string { return fmt.Sprintf("0f%08X", math.Float32bits(float32(f))) }
func immF64(f float64) string { return fmt.Sprintf("0d%016X", math.Float64bits(f)) }
func imm(n int) string        { return strconv.Itoa(n) }

// isImm reports whether an operand is an immediate rather than a register.
func isImm(s string) bool { return s != "" && s[0] != '%' }
