// Package regress walks a folder of regression graphs for tests: every bug the property tests,
// fuzzing or an audit found is kept as a named graph NAME.gir, and each package that owns a kind
// of bug (passes: the pipeline property; runtime/check: compiled code against the reference)
// checks its folder with Run. A graph's leading comment lines say how to check it (Header).
package regress
