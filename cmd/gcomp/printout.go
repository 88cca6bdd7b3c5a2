package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// NumPy's default print options, which the printed form follows: above printThreshold elements
// an axis longer than 2*printEdge shows its first and last printEdge entries around "...";
// floats get at most printPrecision fractional digits.
const (
	printThreshold = 1000
	printEdge      = 3
	printPrecision = 8
)

// printOutputs writes each output, in the graph's order (f's), as a line "NAME: TYPE", by the
// name the model's file gives it and its concrete type, and its values (formatTensor), with a
// blank line between outputs: what `gcomp run` prints without --output-dir.
func printOutputs(w io.Writer, outs map[string]*tensor.Tensor, f runFiles) {
	graphName := map[string]string{}
	for name, path := range f.outs {
		graphName[path] = name
	}
	first := true
	for _, path := range f.names {
		name, ok := graphName[path]
		if !ok {
			continue // an input's file
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		t := outs[name]
		fmt.Fprintf(w, "%s: %s\n%s\n", printableName(f.user[path]), t.Type.DType.String()+t.Type.Shape.String(), formatTensor(t))
	}
}

// printableName is name as read from a model's file, quoted when it holds what a terminal would
// act on or a reader could not see (a control character, a newline, invisible spaces).
func printableName(name string) string {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(name)
	}
	return name
}

// formatTensor is t's values as NumPy's str(array) prints them with its default options: nested
// brackets, one row per line, blocks of higher axes separated by blank lines, floats in fixed
// or scientific notation chosen over the whole array, each with the fewest digits (at most 8
// after the point) that give back its value in t's dtype, columns aligned, bools as True/False.
// Unlike NumPy it never wraps long rows. A zero-size tensor is "[]".
func formatTensor(t *tensor.Tensor) string {
	shape := t.Type.Shape
	n := shape.NumElements()
	if n == 0 && len(shape) > 0 {
		return "[]"
	}
	summarize := n > printThreshold
	// The indices shown along each axis; -1 marks the "..." gap.
	shown := make([][]int, len(shape))
	for a, d := range shape {
		if summarize && d > 2*printEdge {
			for i := 0; i < printEdge; i++ {
				shown[a] = append(shown[a], i)
			}
			shown[a] = append(shown[a], -1)
			for i := d - printEdge; i < d; i++ {
				shown[a] = append(shown[a], i)
			}
			continue
		}
		for i := 0; i < d; i++ {
			shown[a] = append(shown[a], i)
		}
	}
	strides := make([]int, len(shape))
	for a, s := len(shape)-1, 1; a >= 0; a-- {
		strides[a], s = s, s*shape[a]
	}
	// The flat indices of the shown elements, in order, to choose a common format over.
	var flat []int
	var collect func(a, off int)
	collect = func(a, off int) {
		if a == len(shape) {
			flat = append(flat, off)
			return
		}
		for _, i := range shown[a] {
			if i >= 0 {
				collect(a+1, off+i*strides[a])
			}
		}
	}
	collect(0, 0)
	elem := elementFormat(t, flat)
	if len(shape) == 0 {
		return strings.TrimSpace(elem(0))
	}
	var b strings.Builder
	var render func(a, off int)
	render = func(a, off int) {
		b.WriteByte('[')
		for k, i := range shown[a] {
			if k > 0 {
				if a == len(shape)-1 {
					b.WriteByte(' ')
				} else {
					b.WriteString(strings.Repeat("\n", len(shape)-1-a) + strings.Repeat(" ", a+1))
				}
			}
			switch {
			case i < 0:
				b.WriteString("...")
			case a == len(shape)-1:
				b.WriteString(elem(off + i*strides[a]))
			default:
				render(a+1, off+i*strides[a])
			}
		}
		b.WriteByte(']')
	}
	render(0, 0)
	return b.String()
}

// elementFormat returns the formatter of t's elements, each padded to the width the elements at
// the flat indices shown need.
func elementFormat(t *tensor.Tensor, shown []int) func(int) string {
	d := t.Type.DType
	if !d.IsFloat() {
		word := func(i int) string {
			if d == ir.Bool {
				if t.I[i] != 0 {
					return "True"
				}
				return "False"
			}
			return strconv.FormatInt(t.I[i], 10)
		}
		width := 0
		for _, i := range shown {
			width = max(width, len(word(i)))
		}
		return func(i int) string { return fmt.Sprintf("%*s", width, word(i)) }
	}
	// NumPy's choice: scientific when the largest magnitude is 1e8 or more, or the smallest
	// nonzero one below 1e-4, or they are more than 1e3 apart.
	maxAbs, minAbs := 0.0, math.Inf(1)
	for _, i := range shown {
		if v := math.Abs(t.F[i]); !math.IsInf(v, 0) && !math.IsNaN(v) && v != 0 {
			maxAbs, minAbs = max(maxAbs, v), min(minAbs, v)
		}
	}
	sci := maxAbs >= 1e8 || maxAbs > 0 && (minAbs < 1e-4 || maxAbs/minAbs > 1e3)
	// Each finite value splits into the part before the point (with its sign), the digits after
	// it and, in scientific notation, the exponent's digits; the columns align on the point.
	// NumPy pads the digits after the point with spaces in fixed notation, with zeros in
	// scientific notation, and nan and inf to the common width.
	type parts struct{ head, frac, exp string }
	split := func(v float64) parts {
		var p parts
		s := shortestDigits(d, v, sci)
		if sci {
			s, p.exp, _ = strings.Cut(s, "e")
		}
		p.head, p.frac, _ = strings.Cut(s, ".")
		return p
	}
	headW, fracW, expW, special := 0, 0, 0, 0
	for _, i := range shown {
		if v := t.F[i]; !finite(v) {
			special = max(special, len(nonFinite(v)))
			continue
		}
		p := split(t.F[i])
		headW, fracW, expW = max(headW, len(p.head)), max(fracW, len(p.frac)), max(expW, len(p.exp)-1)
	}
	right := 1 + fracW // the point and the digits after it
	if sci {
		right += 2 + expW // e, the sign and the digits
	}
	headW = max(headW, special-right)
	return func(i int) string {
		v := t.F[i]
		if !finite(v) {
			return fmt.Sprintf("%*s", headW+right, nonFinite(v))
		}
		p := split(v)
		if !sci {
			return fmt.Sprintf("%*s.%-*s", headW, p.head, fracW, p.frac)
		}
		return fmt.Sprintf("%*s.%s%se%s%0*s", headW, p.head, p.frac, strings.Repeat("0", fracW-len(p.frac)), p.exp[:1], expW, p.exp[1:])
	}
}

// nonFinite is NumPy's word for a NaN or an infinity.
func nonFinite(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case v < 0:
		return "-inf"
	}
	return "inf"
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// shortestDigits writes v, a value of the float dtype d, with the fewest digits after the point
// (at most printPrecision) that round back to v in d: "0.1" for f16's 0.0999755859375. In
// scientific notation the exponent has at least two digits ("1.e-05").
func shortestDigits(d ir.DType, v float64, sci bool) string {
	format := byte('f')
	if sci {
		format = 'e'
	}
	var s string
	for p := 0; p <= printPrecision; p++ {
		s = strconv.FormatFloat(v, format, p, 64)
		if back, err := strconv.ParseFloat(s, 64); err == nil && tensor.RoundFloat(d, back) == v {
			break
		}
	}
	if m, e, ok := strings.Cut(s, "e"); ok {
		if !strings.Contains(m, ".") {
			m += "."
		}
		return m + "e" + e
	}
	if !strings.Contains(s, ".") {
		s += "."
	}
	return s
}
