// Package symtest builds the symbolic sizes that tests of the code generators hand a kernel
// (plan.Kernel.Sizes) from a graph written at the bound: every axis of the bound's size becomes
// the dim, so one .gir body serves both the static kernel and the symbolic one.
//
//	g := parse("graph k {\n  input %a : f32[2,13]\n ...")
//	k := plan.Kernel{Graph: g, Symbolic: true, Sizes: symtest.SizesOver(g, 13, "seq", nil)}
package symtest
