package ptx

import "slices"

// Row reductions over inner axes: a symbolic kernel's reduction that keeps its leading symbolic
// rows and reduces static axes that are not trailing (nearest upsampling's backward sums each
// input pixel's k×k window of the gradient: axes [3, 5] of [N, C, H, k, W, k], or [3] of
// [N, C, H, k, W] once the trailing window is summed). The static build takes a contiguous
// reduced block with the column template, whose tiles span the kept axes before and after it,
// and scattered axes with the row template over the kept elements; at symbolic sizes the row
// template takes both over the kept elements, each element's coordinates put
// together from the kept and the reduced positions (reduceShape.rowElement, the scattered
// layout). The kept shape leads with the rows and every other axis is static, so a run's kept
// elements are the first N·(kept per row) of the bound's, and the row count is the size
// parameter as for a trailing reduction.

// rowsInner returns rs as the scattered row layout when symbolic kernel k reduces inner axes of
// its rows (axis 0 kept, the reduced axes not trailing); rs unchanged otherwise.
func rowsInner(k Kernel, rs reduceShape) reduceShape {
	if !k.Symbolic || slices.Contains(rs.axes, 0) || rs.rowPattern && !rs.scattered {
		return rs
	}
	kept, red := rs.split()
	rs.a, rs.r, rs.c = kept.NumElements(), red.NumElements(), 1
	rs.rowPattern, rs.scattered = true, true
	return rs
}
