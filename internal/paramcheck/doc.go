// Package paramcheck keeps differential tests honest about their weights: a test that compares a
// compiled kernel with the reference interpreter on parameters that are all zeros passes whatever
// the kernel does with them (every product is zero, a sum loses the term, a gather reads row 0),
// and tensor.SeededValues fills a param declared without an init attribute with zeros.
//
// Every harness that draws parameters calls NonZero on them before comparing:
//
//	_, params, err := tensor.SeededValues(g, 7)
//	...
//	paramcheck.NonZero(t, params)
//
// The rule is simple on purpose: any parameter, of any dtype, whose every element is zero fails
// the test, naming the parameter. The fix is an initializer on the param ({init="normal",
// std=0.5} or {init="uniform", low=-1, high=1} in IR text, frontend.Normal/Uniform in the DSL).
// A test that means zero weights says so, with its reason, before it calls the harness:
//
//	paramcheck.AllowZero(t, "the optimizer's first step from zero moments", "m", "v")
//
// which holds for t and its subtests.
package paramcheck
