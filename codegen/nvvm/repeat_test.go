package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// A nearest upsampling (broadcast along a new last axis merged into the row by a reshape)
// keeps a loop kernel's element group where r divides the group: lane j reads element j/r of
// n/r consecutive operand elements, which libNVVM loads with one vector load (codegen/ptx's
// TestRepeatGroup, on the same graphs). Where r does not divide the group, or rows are too
// short for one, each lane is computed on its own; every case matches the reference.
func TestRepeatGroup(t *testing.T) {
	p := requireProducer(t)
	upsample := func(dt string, h, w, r int, concat bool) string {
		src := fmt.Sprintf(`graph g {
  input %%x : %[1]s[2,3,%[2]d,%[3]d]
  %%0 = broadcast_in_dim(%%x) {dims=[0,1,2,4], shape=[2,3,%[2]d,%[4]d,%[3]d]} : %[1]s[2,3,%[2]d,%[4]d,%[3]d]
  %%1 = reshape(%%0) {shape=[2,3,%[5]d,%[3]d]} : %[1]s[2,3,%[5]d,%[3]d]
  %%2 = broadcast_in_dim(%%1) {dims=[0,1,2,3], shape=[2,3,%[5]d,%[3]d,%[4]d]} : %[1]s[2,3,%[5]d,%[3]d,%[4]d]
  %%3 = reshape(%%2) {shape=[2,3,%[5]d,%[6]d]} : %[1]s[2,3,%[5]d,%[6]d]
`, dt, h, w, r, h*r, w*r)
		if concat {
			return src + fmt.Sprintf(`  input %%s : %[1]s[2,5,%[2]d,%[3]d]
  %%4 = concat(%%3, %%s) {axis=1} : %[1]s[2,8,%[2]d,%[3]d]
  output y = %%4
}`, dt, h*r, w*r)
		}
		return src + "  output y = %3\n}"
	}
	cases := []groupCase{
		{"f32_x2", upsample("f32", 8, 8, 2, false), "ld.global.v2.f32", "", true},
		{"f32_x2_concat", upsample("f32", 8, 8, 2, true), "ld.global.v2.f32", "ld.global.f32", true},
		{"f32_x4", upsample("f32", 4, 8, 4, false), "", "", true}, // r = n: one scalar load per group
		// libNVVM 11.8 lowers the four halves' <4 x half> load as two 32-bit loads of packed
		// pairs, as in any f16 kernel (50% per load instruction): no 16-bit load is left.
		{"f16_x2", upsample("f16", 8, 16, 2, false), "ld.global.b32", "ld.global.b16", false},
		{"f32_x3", upsample("f32", 5, 4, 3, false), "", "", false}, // 12-wide rows: r does not divide 4
		{"f32_odd", upsample("f32", 3, 3, 2, false), "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, p) })
	}
}

// Below a nearest upsampling, the operand group passes a view where its lanes stay
// consecutive in the operand's rows (a slice starting at a multiple of the group, a transpose
// keeping the last axis) or all read one element (a broadcast along rows); other views compute
// each lane on their own. A concat along an axis other than the last keeps the output's group
// in every operand. Each kernel matches the reference.
func TestRepeatGroupViews(t *testing.T) {
	p := requireProducer(t)
	// upsample2 doubles the rows of u, an f32[2,3,8,8] computed by the lines before it.
	upsample2 := func(inputs, before string) string {
		return `graph g {
` + inputs + before + `  %1 = broadcast_in_dim(%u) {dims=[0,1,2,3], shape=[2,3,8,8,2]} : f32[2,3,8,8,2]
  %2 = reshape(%1) {shape=[2,3,8,16]} : f32[2,3,8,16]
  output y = %2
}`
	}
	cases := []groupCase{
		{"slice_aligned", upsample2("  input %x : f32[2,3,8,12]\n",
			"  %u = slice(%x) {limit=[2,3,8,12], start=[0,0,0,4]} : f32[2,3,8,8]\n"), "ld.global.v2.f32", "", false},
		{"slice_unaligned", upsample2("  input %x : f32[2,3,8,12]\n",
			"  %u = slice(%x) {limit=[2,3,8,9], start=[0,0,0,1]} : f32[2,3,8,8]\n"), "", "", false},
		{"transpose_rows", upsample2("  input %x : f32[3,2,8,8]\n",
			"  %u = transpose(%x) {perm=[1,0,2,3]} : f32[2,3,8,8]\n"), "ld.global.v2.f32", "", true},
		{"transpose_columns", upsample2("  input %x : f32[2,3,8,8]\n",
			"  %u = transpose(%x) {perm=[0,1,3,2]} : f32[2,3,8,8]\n"), "", "", false},
		{"broadcast_column", upsample2("  input %x : f32[2,3,8,1]\n",
			"  %u = broadcast_in_dim(%x) {dims=[0,1,2,3], shape=[2,3,8,8]} : f32[2,3,8,8]\n"), "", "", true},
		{"concat", `graph g {
  input %a : f32[2,3,8,8]
  input %b : f32[2,5,8,8]
  %0 = concat(%a, %b) {axis=1} : f32[2,8,8,8]
  output y = %0
}`, "ld.global.v4.f32", "ld.global.f32", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, p) })
	}
}

// groupCase is a loop kernel's graph (src) and what its NVVM PTX must show.
type groupCase struct {
	name, src string
	vector    string // a load the kernel must hold ("" for none)
	scalar    string // a load it must not hold ("" for none)
	coalesced bool   // global loads at least 90% efficient on the simulator
}

// check compiles the case's kernel with p, checks its loads, assembles it, and runs it against
// the reference and codegen/ptx.
func (c groupCase) check(t *testing.T, p *Producer) {
	t.Helper()
	g, err := ir.Parse(c.name+".gir", []byte(c.src))
	if err != nil {
		t.Fatal(err)
	}
	k := plan.Kernel{Name: "k_" + c.name, Graph: g}
	text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if c.vector != "" && !strings.Contains(text, c.vector) {
		t.Errorf("no %s in the kernel:\n%s", c.vector, text)
	}
	if c.scalar != "" && strings.Contains(text, c.scalar+" ") {
		t.Errorf("%s in the kernel:\n%s", c.scalar, text)
	}
	assemble(t, text, []plan.Kernel{k})
	st := checkKernel(t, text, k, launches[0], 9, plan.Target{SM: 80})
	if !c.coalesced {
		return
	}
	if eff := float64(st.GlobalLoadBytes) / float64(32*st.GlobalLoadSectors); eff < 0.9 {
		t.Errorf("loads %.0f%% coalesced:\n%s", 100*eff, text)
	}
}
