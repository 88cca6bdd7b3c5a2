// Package ops is gcomp's op set as one data table: for every op its name, arity, class, attributes,
// shape and dtype inference, and reference semantics. Passes ask the table ("is this
// elementwise?") instead of switching on names, and the reference interpreter (runtime/ref) runs
// the table's Eval functions: they are the definition of what each op computes.
package ops
