package ptx

import (
	"fmt"
	"strings"
)

// Module is a parsed PTX module.
type Module struct {
	Version     string
	Target      []string
	AddressSize int
	Vars        []*Var // module-scope .global/.shared/.const variables
	Funcs       []*Func
}

// Func returns the function named name, or nil.
func (m *Module) Func(name string) *Func {
	for _, f := range m.Funcs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Var is a variable or parameter declaration.
type Var struct {
	Pos    Pos
	Space  string // "global", "shared", "const", "local", "param"
	Align  int    // 0 when not given
	Type   string // element type without the dot: "b8", "u32", "f32", ...
	Vec    int    // 2 or 4 for .v2/.v4 variables, else 0
	Name   string
	Dims   []int // array dimensions; 0 for an unsized []
	Init   []Operand
	Extern bool
}

// ElemSize is the size in bytes of one element (a vector counts as one).
func (v *Var) ElemSize() int {
	n := TypeSize(v.Type)
	if v.Vec > 0 {
		n *= v.Vec
	}
	return n
}

// Size is the variable's size in bytes (0 for an unsized array, -1 when
// it exceeds 2^40).
func (v *Var) Size() int {
	n := v.ElemSize()
	for _, d := range v.Dims {
		if d > 0 && n > (1<<40)/d {
			return -1
		}
		n *= d
	}
	return n
}

// Alignment is the declared alignment, or the element size.
func (v *Var) Alignment() int {
	if v.Align > 0 {
		return v.Align
	}
	if n := v.ElemSize(); n > 0 {
		return n
	}
	return 1
}

// RegDecl declares one register, or Count registers Name0..Name{Count-1}.
type RegDecl struct {
	Pos   Pos
	Type  string
	Name  string
	Count int // 0 for a single register
}

// Func is an .entry or .func.
type Func struct {
	Pos     Pos
	Name    string
	Entry   bool
	Rets    []*Var
	Params  []*Var
	Regs    []*RegDecl
	Vars    []*Var // .local, .shared and call-site .param variables of the body
	Body    []Stmt
	HasBody bool
	ReqNTID []int
	MaxNTID []int
}

// Stmt is a label or an instruction.
type Stmt struct {
	Label string
	Pos   Pos
	Inst  *Inst
}

// Inst is one instruction as written: the dotted opcode and its operands.
type Inst struct {
	Pos      Pos
	Guard    string // predicate register, "" when unguarded
	GuardNeg bool
	Op       string // e.g. "ld.global.v4.f32"
	Args     []Operand
}

func (in *Inst) String() string {
	var b strings.Builder
	if in.Guard != "" {
		b.WriteString("@")
		if in.GuardNeg {
			b.WriteString("!")
		}
		b.WriteString(in.Guard + " ")
	}
	b.WriteString(in.Op)
	for i, a := range in.Args {
		if i == 0 {
			b.WriteString(" ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	return b.String()
}

// OperandKind says what an operand is.
type OperandKind uint8

const (
	OpName  OperandKind = iota // register, variable, label, function, special register or "_"
	OpInt                      // integer literal (Int)
	OpFloat                    // float literal: Bits holds f32 bits if F32, else f64 bits
	OpAddr                     // [Name+Int], Name may be empty for an absolute address
	OpVec                      // {a, b, ...}
	OpList                     // (a, b, ...) in call
	OpPair                     // p|q destination of setp
)

// Operand is an instruction operand.
type Operand struct {
	Kind  OperandKind
	Pos   Pos
	Name  string
	Neg   bool // !p
	Int   int64
	Bits  uint64
	F32   bool
	Elems []Operand
}

func (o Operand) String() string {
	switch o.Kind {
	case OpName:
		if o.Neg {
			return "!" + o.Name
		}
		return o.Name
	case OpInt:
		return fmt.Sprint(o.Int)
	case OpFloat:
		if o.F32 {
			return fmt.Sprintf("0f%08X", o.Bits)
		}
		return fmt.Sprintf("0d%016X", o.Bits)
	case OpAddr:
		switch {
		case o.Name == "":
			return fmt.Sprintf("[%d]", o.Int)
		case o.Int != 0:
			return fmt.Sprintf("[%s+%d]", o.Name, o.Int)
		}
		return "[" + o.Name + "]"
	case OpPair:
		return o.Elems[0].String() + "|" + o.Elems[1].String()
	}
	open, close := "{", "}"
	if o.Kind == OpList {
		open, close = "(", ")"
	}
	s := make([]string, len(o.Elems))
	for i, e := range o.Elems {
		s[i] = e.String()
	}
	return open + strings.Join(s, ", ") + close
}

// TypeSize is the size in bytes of a PTX fundamental type name ("u32"), 0 if unknown.
func TypeSize(t string) int {
	switch t {
	case "pred":
		return 1
	case "b8", "u8", "s8", "e4m3", "e5m2":
		return 1
	case "b16", "u16", "s16", "f16", "bf16":
		return 2
	case "b32", "u32", "s32", "f32", "f16x2", "bf16x2", "tf32":
		return 4
	case "b64", "u64", "s64", "f64":
		return 8
	case "b128":
		return 16
	}
	return 0
}
