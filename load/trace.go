package load

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"sort"
	"strconv"

	"github.com/traefik/yaegi/interp"
)

// The embedded interpreter's frames are invisible to runtime.Callers, so the DSL cannot find the
// model.go line that called it. The loader therefore instruments the model source: every function
// body starts with `defer __gcomp.Leave(__gcomp.Enter());` and every statement is preceded by
// `__gcomp.At(LINE);`. Both are inserted on the line they describe, so line numbers do not move;
// columns that move are mapped back in messages (see insertions.origCol).

const tracePkg = "gcomptrace"

// tracer keeps a stack of the current line of every active model function.
type tracer struct {
	file  string
	lines []int
}

func (t *tracer) Enter() int  { t.lines = append(t.lines, 0); return len(t.lines) }
func (t *tracer) Leave(n int) { t.lines = t.lines[:n-1] }
func (t *tracer) At(line int) { t.lines[len(t.lines)-1] = line }
func (t *tracer) pos() string {
	if len(t.lines) == 0 || t.lines[len(t.lines)-1] == 0 {
		return ""
	}
	return t.file + ":" + strconv.Itoa(t.lines[len(t.lines)-1])
}

func (t *tracer) exports() interp.Exports {
	return interp.Exports{tracePkg + "/" + tracePkg: {
		"Enter": reflect.ValueOf(t.Enter),
		"Leave": reflect.ValueOf(t.Leave),
		"At":    reflect.ValueOf(t.At),
	}}
}

// insertion is text that replaces the source bytes [offset, end); end == offset inserts.
type insertion struct {
	offset, end int
	line, col   int // original position
	text        string
}

type insertions []insertion

// instrument returns src with the tracing calls added and loops over integers rewritten as
// three-clause loops (the interpreter predates Go 1.22's range over int), and the edits made.
func instrument(fset *token.FileSet, f *ast.File, src []byte, info *types.Info) ([]byte, insertions) {
	var ins insertions
	add := func(p token.Pos, text string) {
		pos := fset.Position(p)
		ins = append(ins, insertion{offset: pos.Offset, end: pos.Offset, line: pos.Line, col: pos.Column, text: text})
	}
	srcOf := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
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
		pos := fset.Position(rs.For)
		ins = append(ins, insertion{offset: pos.Offset, end: fset.Position(rs.Body.Lbrace).Offset, line: pos.Line, col: pos.Column, text: header})
	}
	// The import goes on the package clause's line so that no line moves.
	add(f.Name.End(), "; import "+tracePkg+` "`+tracePkg+`"`)
	stmts := func(list []ast.Stmt) {
		for _, s := range list {
			add(s.Pos(), tracePkg+".At("+strconv.Itoa(fset.Position(s.Pos()).Line)+"); ")
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				add(n.Body.Lbrace+1, " defer "+tracePkg+".Leave("+tracePkg+".Enter());")
			}
		case *ast.FuncLit:
			add(n.Body.Lbrace+1, " defer "+tracePkg+".Leave("+tracePkg+".Enter());")
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
		}
		return true
	})
	sort.SliceStable(ins, func(i, j int) bool {
		if ins[i].offset != ins[j].offset {
			return ins[i].offset < ins[j].offset
		}
		return ins[i].end < ins[j].end
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

// origCol maps a column of the instrumented source back to the original source.
func (ins insertions) origCol(line, col int) int {
	shift := 0
	for _, in := range ins {
		if in.line == line && in.col+shift < col {
			shift += len(in.text) - (in.end - in.offset)
		}
	}
	return col - shift
}
