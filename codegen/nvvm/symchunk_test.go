package nvvm

import (
	"fmt"
	"regexp"
	"testing"
)

// TestSymbolicChunkCopies: a fold's generic tensor-core operand (attention's heads of d
// elements merged back through a transpose and a reshape) copies 16-byte chunks through its
// views when d, and so every size along its contiguous dim at every run, is a multiple of 8
// halves, and element copies otherwise (symchunk.go); either way the product equals the
// reference and codegen/ptx's bit for bit at 0, 1, a prime and the bound (runFoldViews). The
// left operand's 12 free halves take 4-byte copies, so any 16-byte one is the right side's.
func TestSymbolicChunkCopies(t *testing.T) {
	p := requireProducer(t)
	chunk := regexp.MustCompile(`cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, `)
	elem := regexp.MustCompile(`ld\.global\S*\.[ub]16`)
	for _, c := range []struct {
		d      string
		heads  int
		hd     int // elements per head along the contiguous dim
		chunks bool
	}{
		{"f16", 2, 8, true},
		{"bf16", 4, 16, true},
		{"f16", 2, 4, false}, // 8 bytes: no chunk fits a head
		{"bf16", 3, 12, false},
	} {
		t.Run(fmt.Sprintf("%s/%dx%d", c.d, c.heads, c.hd), func(t *testing.T) {
			n := c.heads * c.hd
			src := fmt.Sprintf("graph k {\n  input %%%%x : %[1]s[2,%%[1]d,12]\n  input %%%%dv : %[1]s[2,%[2]d,%%[1]d,%[3]d]\n"+
				"  %%%%0 = transpose(%%%%dv) {perm=[0,2,1,3]} : %[1]s[2,%%[1]d,%[2]d,%[3]d]\n"+
				"  %%%%1 = reshape(%%%%0) {shape=[2,%%[1]d,%[4]d]} : %[1]s[2,%%[1]d,%[4]d]\n"+
				"  %%%%2 = dot_general(%%%%x, %%%%1) {lhs_contract=[0,1], rhs_contract=[0,1]} : %[1]s[12,%[4]d]\n  output out = %%%%2\n}\n",
				c.d, c.heads, c.hd, n)
			text := runFoldViews(t, p, src, "tensor core", 2)
			if got := chunk.MatchString(text); got != c.chunks {
				t.Errorf("16-byte chunk copies %v, want %v", got, c.chunks)
			}
			if got := elem.MatchString(text); got == c.chunks {
				t.Errorf("16-bit element copies %v, want %v", got, !c.chunks)
			}
		})
	}
}
