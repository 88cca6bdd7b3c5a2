package load

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/gcomp/gcomp/frontend"
)

// The embedded interpreter's frames are invisible to runtime.Callers, so the DSL cannot find the
// model.go line that called it. The loader therefore instruments the model source: every function
// body starts with `defer gcomptrace.Leave(gcomptrace.Enter());`, every statement is preceded by
// `gcomptrace.At(LINE);`, and where a statement's line could be wrong for a call (the statement
// spans lines, or the call is in a loop's condition) the call into compiled code passes its last
// argument, or else its receiver or function, through `gcomptrace.Line(LINE, (T)(x)).(T)`, which
// sets the call's line just before the call, the line `go build` would report. All are inserted
// on the line they describe, so line numbers do not move; columns that move are mapped back in
// messages (see insertions.origCol).

const tracePkg = "gcomptrace"

// maxCallDepth bounds the nesting of model functions, as Python's default recursion limit does:
// deep enough for any model, and runaway recursion stops with a message instead of overflowing
// the Go stack (the interpreter re-raises a panic once per frame, so unwinding costs grow with
// the square of the depth: 0.1 s here, minutes at the depth the stack would allow).
const maxCallDepth = 1000

// tracer keeps a stack of the current line of every active model function.
type tracer struct {
	file  string
	lines []int
	// maxBytes bounds one make's allocation (Size).
	maxBytes int64
	// panicked is the line stack as it was where the panic now unwinding began: the deferred
	// Leave calls pop the stack before the model's caller can recover.
	panicked []int
	// types are the names of the file's types, names their interpreted text (typenames.go).
	types []string
	names *strings.Replacer
}

func (t *tracer) Enter() int {
	if len(t.lines) >= maxCallDepth {
		panic(&frontend.Error{Pos: t.pos(), Msg: fmt.Sprintf("calls nested more than %d deep (unbounded recursion?)", maxCallDepth)})
	}
	t.lines = append(t.lines, 0)
	return len(t.lines)
}

func (t *tracer) Leave(n int) {
	if t.panicked == nil && unwinding() {
		t.panicked = slices.Clone(t.lines)
	}
	t.lines = t.lines[:n-1]
}

func (t *tracer) At(line int) {
	t.lines[len(t.lines)-1] = line
	t.panicked = nil // a panic recovered inside the model is over
}

// Line sets the line of the call whose last argument (or receiver) is v, and returns v.
func (t *tracer) Line(line int, v any) any {
	t.lines[len(t.lines)-1] = line
	return v
}

func (t *tracer) pos() string { return t.posIn(t.lines) }

func (t *tracer) posIn(lines []int) string {
	if len(lines) == 0 || lines[len(lines)-1] == 0 {
		return ""
	}
	return t.file + ":" + strconv.Itoa(lines[len(lines)-1])
}

// unwinding reports whether Leave runs because of a panic. The interpreter runs a frame's
// deferred calls from its own deferred function, which the runtime calls from gopanic when
// unwinding and from the interpreter's run loop (runCfg) on a normal return.
func unwinding() bool {
	var pcs [8]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			return true
		case strings.HasSuffix(f.Function, "/interp.runCfg") || !more:
			return false
		}
	}
}

// recovered turns a panic that left the model function into an *frontend.Error at the line where
// it began: the DSL's errors keep their position (a nil tensor, found where no position is known,
// gets one), anything else is described as Go describes it.
func (t *tracer) recovered(r any) *frontend.Error {
	pos := t.posIn(t.panicked)
	if pos == "" {
		pos = t.pos()
	}
	if err, ok := r.(error); ok {
		var fe *frontend.Error
		if errors.As(err, &fe) {
			if fe.Pos == "" {
				fe.Pos = pos
			}
			fe.Msg = t.named(fe.Msg)
			return fe
		}
	}
	return &frontend.Error{Pos: pos, Msg: "panic: " + t.named(panicMessage(r))}
}

// interpPanics maps the reflect package's panics, which the interpreter raises where compiled Go
// raises runtime errors, to the runtime's words (without the index, which reflect does not say).
var interpPanics = []struct{ contains, msg string }{
	{"index out of range", "runtime error: index out of range"},
	{"slice index out of bounds", "runtime error: slice bounds out of range"},
	{"on zero Value", "runtime error: invalid memory address or nil pointer dereference"},
}

// interpPosRE matches the position of the instrumented source some interpreter panics start with.
var interpPosRE = regexp.MustCompile(`^\d+:\d+: `)

func panicMessage(r any) string {
	msg := fmt.Sprint(r)
	if strings.HasPrefix(msg, "reflect") {
		for _, p := range interpPanics {
			if strings.Contains(msg, p.contains) {
				return p.msg
			}
		}
	}
	return interpPosRE.ReplaceAllString(msg, "")
}

func (t *tracer) exports() interp.Exports {
	return interp.Exports{tracePkg + "/" + tracePkg: {
		"Enter": reflect.ValueOf(t.Enter),
		"Leave": reflect.ValueOf(t.Leave),
		"At":    reflect.ValueOf(t.At),
		"Line":  reflect.ValueOf(t.Line),
		"Size":  reflect.ValueOf(t.Size),
	}}
}

// insertion is text that replaces the source bytes [offset, end); end == offset inserts.
type insertion struct {
	offset, end int
	line, col   int // original position
	text        string
	rank        int // order among insertions at one offset
}

type insertions []insertion

// instrument returns src with the tracing calls added and loops over integers rewritten as
// three-clause loops (the interpreter predates Go 1.22's range over int), and the edits made.
func instrument(fset *token.FileSet, f *ast.File, src []byte, pkg *types.Package, info *types.Info) ([]byte, insertions) {
	var ins insertions
	// Text inserted at one offset goes in the order added, except that the closing text of
	// nested wrappings goes inner first: rank sorts it after all opening text, in reverse.
	add := func(p token.Pos, text string, closing bool) {
		pos := fset.Position(p)
		rank := len(ins)
		if closing {
			rank = 1<<30 - rank
		}
		ins = append(ins, insertion{offset: pos.Offset, end: pos.Offset, line: pos.Line, col: pos.Column, text: text, rank: rank})
	}
	// replace puts text in place of the source bytes [p, end).
	replace := func(p, end token.Pos, text string) {
		pos := fset.Position(p)
		ins = append(ins, insertion{offset: pos.Offset, end: fset.Position(end).Offset, line: pos.Line, col: pos.Column, text: text, rank: len(ins)})
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	srcOf := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	var replaced [][2]int // source ranges rewritten as a whole
	rewriteIntRange := func(rs *ast.RangeStmt) {
		// The range expression keeps its own text (and so its newlines): no line moves.
		key := "_gcompI"
		id, isIdent := rs.Key.(*ast.Ident)
		blank := rs.Key == nil || isIdent && id.Name == "_"
		if isIdent && !blank {
			key = id.Name
		}
		var header string
		if rs.Tok == token.ASSIGN && !blank {
			header = fmt.Sprintf("for %s = 0; %s < (%s); %s++ ", srcOf(rs.Key), srcOf(rs.Key), srcOf(rs.X), srcOf(rs.Key))
		} else {
			header = fmt.Sprintf("for %s, _gcompN := 0, %s; %s < _gcompN; %s++ ", key, srcOf(rs.X), key, key)
		}
		pos, end := fset.Position(rs.For), fset.Position(rs.Body.Lbrace).Offset
		ins = append(ins, insertion{offset: pos.Offset, end: end, line: pos.Line, col: pos.Column, text: header})
		replaced = append(replaced, [2]int{pos.Offset, end})
	}
	// The import goes on the package clause's line so that no line moves.
	add(f.Name.End(), "; import "+tracePkg+` "`+tracePkg+`"`, false)
	traced := map[ast.Stmt]bool{} // statements that set their line with At
	stmts := func(list []ast.Stmt) {
		for _, s := range list {
			switch s.(type) {
			case *ast.CaseClause, *ast.CommClause:
				continue // a switch's or select's body lists clauses, which set their own lines
			}
			add(s.Pos(), tracePkg+".At("+strconv.Itoa(line(s.Pos()))+"); ", false)
			traced[s] = true
		}
	}
	calls := newCallLines(fset, f, pkg, info)
	// wrapCall gives a call its own line where the statement's line could be wrong: in a
	// statement (or the header of one) that spans lines, an else-if or case after the line
	// of the traced statement, and a loop's condition and post statement, which run after
	// the body.
	wrapCall := func(call *ast.CallExpr, stack []ast.Node) {
		var inner, at ast.Stmt
		loopHeader := false
		for i := len(stack) - 1; i >= 0 && at == nil; i-- {
			s, ok := stack[i].(ast.Stmt)
			if !ok {
				continue
			}
			if inner == nil {
				inner = s
			}
			if fs, ok := s.(*ast.ForStmt); ok {
				var child ast.Node = call
				if i+1 < len(stack) {
					child = stack[i+1]
				}
				loopHeader = child != fs.Init && child != fs.Body
			}
			if traced[s] {
				at = s
			}
		}
		if at == nil || !loopHeader && line(inner.Pos()) == line(at.Pos()) && line(headerEnd(inner)) == line(at.Pos()) {
			return
		}
		if e, prefix, suffix, ok := calls.wrap(call, line(call.Lparen)); ok {
			add(e.Pos(), prefix, false)
			add(e.End(), suffix, true)
		}
	}
	// boundMake passes a make's length and capacity through gcomptrace.Size, which refuses one
	// larger than the memory limit before the interpreter allocates it.
	sizes := types.SizesFor("gc", "amd64")
	boundMake := func(call *ast.CallExpr) {
		id, ok := ast.Unparen(call.Fun).(*ast.Ident)
		if b, isB := info.Uses[id].(*types.Builtin); !ok || !isB || b.Name() != "make" || len(call.Args) < 2 {
			return
		}
		var elem int64 = 1
		switch t := info.TypeOf(call.Args[0]).Underlying().(type) {
		case *types.Slice:
			elem = sizes.Sizeof(t.Elem())
		case *types.Chan:
			elem = sizes.Sizeof(t.Elem())
		case *types.Map:
			elem = sizes.Sizeof(t.Key()) + sizes.Sizeof(t.Elem())
		}
		for _, a := range call.Args[1:] {
			add(a.Pos(), tracePkg+".Size(int(", false)
			add(a.End(), "), "+strconv.FormatInt(max(elem, 1), 10)+")", true)
		}
	}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				add(n.Body.Lbrace+1, " defer "+tracePkg+".Leave("+tracePkg+".Enter());", false)
			}
		case *ast.FuncLit:
			add(n.Body.Lbrace+1, " defer "+tracePkg+".Leave("+tracePkg+".Enter());", false)
		case *ast.BlockStmt:
			stmts(n.List)
		case *ast.CaseClause:
			stmts(n.Body)
		case *ast.CommClause:
			stmts(n.Body)
		case *ast.RangeStmt:
			if isIntRange(info, n) {
				rewriteIntRange(n)
			}
		case *ast.CallExpr:
			// Before wrapCall: at one offset the slice opens before and closes after its wrapping.
			if first, last, open, close, ok := calls.variadicSlice(n); ok {
				add(first.Pos(), open, false)
				add(last.End(), close, true)
			}
			if open, close, ok := calls.ifaceConversion(n); ok {
				replace(n.Pos(), n.Lparen+1, open)
				replace(n.Rparen, n.Rparen+1, close)
			}
			wrapCall(n, stack)
			boundMake(n)
		}
		stack = append(stack, n)
		return true
	})
	// Calls inside a rewritten loop header keep the header's line.
	ins = slices.DeleteFunc(ins, func(in insertion) bool {
		for _, r := range replaced {
			if r[0] < in.offset && in.offset < r[1] {
				return true
			}
		}
		return false
	})
	sort.SliceStable(ins, func(i, j int) bool {
		a, b := ins[i], ins[j]
		if a.offset != b.offset {
			return a.offset < b.offset
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.rank < b.rank
	})
	out := make([]byte, 0, len(src)+len(ins)*24)
	last := 0
	for _, in := range ins {
		out = append(out, src[last:in.offset]...)
		out = append(out, in.text...)
		last = in.end
	}
	return append(out, src[last:]...), ins
}

// headerEnd is where a statement's own text ends: before the block of a compound statement,
// at the colon of a case.
func headerEnd(s ast.Stmt) token.Pos {
	if cc, ok := s.(*ast.CaseClause); ok {
		return cc.Colon
	}
	end := s.End()
	ast.Inspect(s, func(n ast.Node) bool {
		if b, ok := n.(*ast.BlockStmt); ok && n != s {
			end = min(end, b.Lbrace)
		}
		return n == s // direct children only
	})
	return end
}

// origCol maps a column of the instrumented source back to the original source.
func (ins insertions) origCol(line, col int) int {
	shift := 0
	for _, in := range ins {
		if in.line != line || in.col+shift >= col {
			continue
		}
		if col < in.col+shift+len(in.text) {
			// Inside text the loader inserted: the user's code is at the insertion's column.
			return in.col
		}
		shift += len(in.text) - (in.end - in.offset)
	}
	return max(col-shift, 1)
}
