package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// DOT renders the graph for graphviz (`dot -Tsvg`): inputs as ellipses, parameters as notes, ops as
// boxes labelled with their op and result type, outputs as double octagons.
func (g *Graph) DOT() string {
	var sb strings.Builder
	names := g.Names()
	fmt.Fprintf(&sb, "digraph %s {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n", strconv.Quote(g.Name))
	for _, v := range g.Values {
		id := fmt.Sprintf("v%d", v.ID)
		switch v.Op {
		case OpInput:
			fmt.Fprintf(&sb, "  %s [shape=ellipse, label=%s];\n", id, strconv.Quote(v.Name+"\n"+v.Type.String()))
		case OpParam:
			fmt.Fprintf(&sb, "  %s [shape=note, label=%s];\n", id, strconv.Quote(v.Name+"\n"+v.Type.String()))
		default:
			label := "%" + names[v] + " = " + v.Op + "\n" + v.Type.String()
			fmt.Fprintf(&sb, "  %s [shape=box, label=%s];\n", id, strconv.Quote(label))
		}
		for i, a := range v.Args {
			fmt.Fprintf(&sb, "  v%d -> %s", a.ID, id)
			if len(v.Args) > 1 {
				fmt.Fprintf(&sb, " [label=\"%d\"]", i)
			}
			sb.WriteString(";\n")
		}
	}
	for i, o := range g.Outputs {
		fmt.Fprintf(&sb, "  out%d [shape=doubleoctagon, label=%s];\n  v%d -> out%d;\n", i, strconv.Quote(o.Name), o.Value.ID, i)
	}
	sb.WriteString("}\n")
	return sb.String()
}
