package ops

import (
	"github.com/gcomp/gcomp/internal/golden"

	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// markdown renders the op table as docs/ops.md.
func markdown() string {
	var sb strings.Builder
	sb.WriteString("# Ops\n\nGenerated from the op table (ops/table.go) by `go test ./ops -run TestOpsDoc -update`; do not edit.\n\n")
	sb.WriteString("Every op's Eval in package ops is its reference semantics, and runtime/ref runs exactly those.\n\n")
	sb.WriteString("## Conventions\n\n" + conventions + "\n")
	kinds := map[AttrKind]string{AttrInt: "int", AttrInts: "[]int", AttrFloat: "float", AttrFloats: "[]float", AttrBool: "bool", AttrString: "string", AttrDType: "dtype"}
	for _, class := range []Class{Elementwise, Reduce, Contraction, Movement, Other, Custom} {
		fmt.Fprintf(&sb, "\n## %s%s\n\n| op | operands | attributes | semantics |\n| --- | --- | --- | --- |\n",
			strings.ToUpper(class.String()[:1]), class.String()[1:])
		for _, op := range All() {
			if op.Class != class {
				continue
			}
			arity := fmt.Sprint(op.Arity)
			if op.Arity == Variadic {
				arity = "1 or more"
			}
			var attrs []string
			for _, a := range op.Attrs {
				if strings.Contains(a.Name, ".") {
					continue // a custom op's gradN.* repeat its own attributes; Doc says so
				}
				s := a.Name + " " + kinds[a.Kind]
				if a.Optional {
					s += " (optional)"
				}
				attrs = append(attrs, s)
			}
			fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", op.Name, arity, strings.Join(attrs, ", "), strings.ReplaceAll(op.Doc, "|", `\|`))
		}
	}
	sb.WriteString("\n## Half precision, autocast and tf32 against PyTorch\n\n" + torchParity)
	return sb.String()
}

func TestOpsDoc(t *testing.T) {
	const path = "../docs/ops.md"
	got := markdown()
	if golden.Updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ops -run TestOpsDoc -update)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("docs/ops.md is stale; run go test ./ops -run TestOpsDoc -update (-want +got):\n%s", d)
	}
}
