// Package ptx parses PTX assembly text (ISA 7.0–8.x) into a syntax tree.
//
// The parser knows the module syntax — .version/.target/.address_size,
// .entry and .func with their .param lists, .reg declarations including
// %r<N> ranges, variables in every state space with alignment and
// initializers, labels, predicate guards, vector operands, address
// expressions and every literal form — but not the meaning of instructions:
// an instruction is kept as its dotted opcode and operands,
//
//	@!%p1 ld.global.v2.f32 {%f1, %f2}, [%rd4+8];
//
// becomes Inst{Guard: "%p1", GuardNeg: true, Op: "ld.global.v2.f32",
// Args: [{%f1, %f2}, [%rd4+8]]}. Sub-qualifiers written with "::" stay part
// of the opcode: ld.global.L1::evict_last.f32 and ld.shared::cta.u32 are
// single names. The simulator decodes that tree once into its own compact
// form.
//
// Names declared inside nested { } blocks are renamed with a unique suffix
// so that later stages see one flat namespace per function.
//
// Errors are *Error values and print as "line:col: message".
package ptx
