// Package sym is the arithmetic of symbolic tensor dimensions: expressions over a graph's declared
// dims (integer constants, symbols, +, -, ·, and floor-division and modulo by a positive constant),
// kept in a canonical form so that equal expressions compare equal:
//
//	batch*seq == seq*batch        (seq+1)-1 == seq        (2*seq+2)/4 == (seq+1)/2
//
// The canonical form is a sum of products with integer coefficients, terms sorted by their
// printed monomial and the constant last. A floor-division that does not simplify is an atom, like
// a symbol, whose numerator is itself canonical with coefficients reduced below the divisor; a
// modulo is spelled e - d*(e/d). Range bounds an expression over the declared intervals of its
// symbols (interval arithmetic: every evaluation inside the ranges lies within it), Eval computes
// it at actual sizes, and String and Parse are the .gir syntax (see docs/dynamic.md).
//
// An Expr is immutable. Arithmetic that overflows int64 marks the result (Overflowed) instead of
// wrapping, and Parse, Range and Eval report it as an error.
package sym
