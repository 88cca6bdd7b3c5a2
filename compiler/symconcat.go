package compiler

import (
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/passes"
)

// concatRefusal adds to why, the refusal of kernel k, what the concat template (codegen/ptx's
// symconcat.go and symconcat_fused.go) does not take when k concatenates along a symbolic dim:
// such a concat runs with elementwise ops and views around it only, never beside a reduction
// or a product (the fusion pass keeps it out of those kernels: passes' fuse_symconcat.go); a
// literal tensor it reads at its own strides.
func concatRefusal(k *passes.Kernel, why string) string {
	for _, v := range k.Body.Values {
		if v.Op != "concat" {
			continue
		}
		s := v.Type.Sym
		if s == nil && k.Origins[v] != nil {
			s = k.Origins[v].Type.Sym
		}
		if ax := v.Attrs.Int("axis", 0); ax < len(s) {
			if _, ok := s[ax].IsConst(); ok {
				continue
			}
		}
		if w := ptx.SymbolicConcat(k.Body); w != "" && s != nil {
			return why + "; its concat along a symbolic dim: " + w
		}
	}
	return why
}
