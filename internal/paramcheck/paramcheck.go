package paramcheck

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// allowed holds, per test name, the params that test lets be all zeros.
var allowed sync.Map // test name -> map[string]string (param -> reason)

// AllowZero lets the named params of t (and of t's subtests) be all zeros, for reason, which
// must say why zero weights are what the test means.
func AllowZero(t testing.TB, reason string, names ...string) {
	t.Helper()
	if strings.TrimSpace(reason) == "" || len(names) == 0 {
		t.Fatalf("paramcheck.AllowZero needs a reason and at least one param, have %q, %q", reason, names)
	}
	m := map[string]string{}
	if old, ok := allowed.Load(t.Name()); ok {
		for k, v := range old.(map[string]string) {
			m[k] = v
		}
	}
	for _, n := range names {
		m[n] = reason
	}
	allowed.Store(t.Name(), m)
	t.Cleanup(func() { allowed.Delete(t.Name()) })
}

// zeroAllowed reports whether test (or a test it is a subtest of) allowed param to be zeros.
func zeroAllowed(test, param string) bool {
	for {
		if m, ok := allowed.Load(test); ok {
			if _, ok := m.(map[string]string)[param]; ok {
				return true
			}
		}
		i := strings.LastIndexByte(test, '/')
		if i < 0 {
			return false
		}
		test = test[:i]
	}
}

// AllZero returns the names, sorted, of the params whose every element is zero (an empty
// tensor has none, so it is not listed).
func AllZero(params map[string]*tensor.Tensor) []string {
	var zero []string
	for name, p := range params {
		if p == nil || p.Len() == 0 {
			continue
		}
		if !slices.ContainsFunc(p.F, func(v float64) bool { return v != 0 }) &&
			!slices.ContainsFunc(p.I, func(v int64) bool { return v != 0 }) {
			zero = append(zero, name)
		}
	}
	sort.Strings(zero)
	return zero
}

// NonZero fails t, naming them, if any params are all zeros but those t allowed (AllowZero).
func NonZero(t testing.TB, params map[string]*tensor.Tensor) {
	t.Helper()
	var bad []string
	for _, name := range AllZero(params) {
		if !zeroAllowed(t.Name(), name) {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("params all zeros, so a miscompiled kernel could pass: %s (give each an initializer, e.g. {init=\"normal\", std=0.5}, or paramcheck.AllowZero with the reason)", strings.Join(bad, ", "))
	}
}

// Randomize gives every param of g that would be drawn as zeros (no init attribute, init="zeros"
// or a constant 0) the initializer N(0, std²) instead (integers: 1 to 7), and
// returns their names: for models whose
// real initialization zeroes biases (PyTorch's LayerNorm, Hugging Face's Linear), so a test of
// the model can see a kernel that drops or misplaces them.
func Randomize(g *ir.Graph, std float64) []string {
	var names []string
	for _, p := range g.Params() {
		switch p.Attrs.String("init", tensor.InitZeros) {
		case tensor.InitConstant:
			if p.Attrs.Float("value", 0) != 0 {
				continue
			}
		case tensor.InitZeros:
		default:
			continue
		}
		if !p.Type.DType.IsFloat() && !p.Type.DType.IsInt() {
			continue // a bool param stays as drawn
		}
		if p.Attrs == nil {
			p.Attrs = ir.Attrs{}
		}
		delete(p.Attrs, "value")
		if p.Type.DType.IsFloat() {
			p.Attrs["init"], p.Attrs["mean"], p.Attrs["std"] = tensor.InitNormal, 0.0, std
		} else { // 1 to 7: within an int4 nibble, never zero
			p.Attrs["init"], p.Attrs["low"], p.Attrs["high"] = tensor.InitUniform, 1.0, 8.0
		}
		names = append(names, p.Name)
	}
	return names
}
