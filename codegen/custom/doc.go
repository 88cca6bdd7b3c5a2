// Package custom turns a model's custom ops (ops class custom) into PTX that joins the
// model's module: CUDA C is compiled by NVRTC (package codegen/nvrtc) for the build's
// architecture, PTX is taken as written; the entry's parameters are checked against what the
// op passes (one .u64 pointer per operand, one to the result, then the scalars in their
// declared types); and Merge appends the units to the module, without their own
// .version/.target header, renaming an entry whose name is taken and renumbering .file
// directives so each unit's .loc lines keep pointing at the user's source. Build refuses PTX
// whose header the module cannot hold: a .version newer than MaxPTXVersion, a .target that is no
// architecture PTX 7.8 knows, or one newer than the build's. Into an NVVM IR module (gcomp build
// --emit nvvm) Merge writes each unit as module-level inline assembly (`module asm "..."` lines),
// so the .ll stays valid LLVM IR and llc or libNVVM compile it to the whole PTX module.
//
//	u, err := custom.Build(v, nvrtcCompiler, 80)  // v: the custom op's ir.Value
//	text, entries, err := custom.Merge(moduleText, []*custom.Unit{u})
package custom
