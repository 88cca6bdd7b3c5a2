package compiler

import (
	"fmt"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// The generator and the executor agree on the error word's size: a constant conversion of a
// negative difference does not compile.
const _ = uint(ptx.ErrorWordBytes-artifact.ErrorWordBytes) + uint(artifact.ErrorWordBytes-ptx.ErrorWordBytes)

// indexChecks copies a launch's gather descriptions into the plan, with the model's names and
// source position where fusion recorded the gather's origin: the table and indices by their
// names when they are the model's inputs or parameters ("the indices" when computed), as the
// reference interpreter names them.
func indexChecks(k *passes.Kernel, cs []ptx.IndexCheck) []artifact.IndexCheck {
	out := make([]artifact.IndexCheck, len(cs))
	for i, c := range cs {
		out[i] = artifact.IndexCheck{Site: c.Site, Op: c.Op, Pos: c.Pos, Indices: c.Indices, Table: c.Table, Rows: c.Rows}
		if v := k.Origins[c.Value]; v != nil {
			out[i].Op = fmt.Sprintf("gather(%s, %s) : %s", operand(v.Args[0]), operand(v.Args[1]), v.Type)
			out[i].Pos = v.Pos
			out[i].Indices = "the indices"
			if named(v.Args[1]) {
				out[i].Indices = v.Args[1].Name
			}
		}
	}
	return out
}

func named(v *ir.Value) bool { return v.Op == ir.OpInput || v.Op == ir.OpParam }

// operand names a model input or parameter, and describes any other value by its op and type.
func operand(v *ir.Value) string {
	if named(v) {
		return "%" + v.Name
	}
	return fmt.Sprintf("%s(…) : %s", v.Op, v.Type)
}
