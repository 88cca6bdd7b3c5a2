package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/tensor"
)

// Loop kernels over movement ops, several outputs and shapes from one element to many blocks:
// each result must equal the reference bit for bit.
var loopCases = []struct{ name, src string }{
	{"bias_relu", `graph g {
  input %x : f32[SHAPE2]
  param %b : f32[N]
  %0 = broadcast_in_dim(%b) {dims=[1], shape=[SHAPE2]} : f32[SHAPE2]
  %1 = add(%x, %0) : f32[SHAPE2]
  %2 = relu(%1) : f32[SHAPE2]
  output y = %2
}`},
	{"transpose_mul", `graph g {
  input %x : f32[M,N]
  input %y : f32[N,M]
  %0 = transpose(%y) {perm=[1,0]} : f32[M,N]
  %1 = mul(%x, %0) : f32[M,N]
  output y = %1
}`},
	{"reshape_slice_pad", `graph g {
  input %x : f32[M,N]
  %0 = reshape(%x) {shape=[N,M]} : f32[N,M]
  %1 = slice(%0) {start=[0,0], limit=[N,M], stride=[1,1]} : f32[N,M]
  %2 = pad(%1) {low=[1,0], high=[0,2], value=-1.5} : f32[N1,M2]
  output y = %2
}`},
	{"concat_iota_select", `graph g {
  input %x : f32[M,N]
  input %y : f32[M,N]
  %0 = concat(%x, %y) {axis=1} : f32[M,NN]
  %1 = iota() {dim=1, dtype=f32, shape=[M,NN]} : f32[M,NN]
  %2 = constant() {dtype=f32, shape=[], value=[3]} : f32[]
  %3 = broadcast_in_dim(%2) {dims=[], shape=[M,NN]} : f32[M,NN]
  %4 = lt(%1, %3) : bool[M,NN]
  %5 = select(%4, %0, %1) : f32[M,NN]
  output y = %5
  output p = %4
}`},
	{"two_outputs_f16", `graph g {
  input %x : f16[M,N]
  input %y : f16[M,N]
  %0 = mul(%x, %y) : f16[M,N]
  %1 = sub(%0, %y) : f16[M,N]
  %2 = cast(%1) {to=f32} : f32[M,N]
  output a = %0
  output b = %2
}`},
	{"strided_slice", `graph g {
  input %x : f32[M,N]
  %0 = slice(%x) {start=[0,1], limit=[M,N], stride=[1,2]} : f32[M,NH]
  %1 = neg(%0) : f32[M,NH]
  output y = %1
}`},
}

// shapes: (M, N) pairs: one element, odd sizes, exact vector multiples, many blocks.
var loopShapes = [][2]int{{1, 1}, {3, 5}, {4, 8}, {33, 100}, {130, 1031}}

func instantiate(src string, m, n int) string {
	r := strings.NewReplacer("SHAPE2", fmt.Sprintf("%d,%d", m, n), "NN", fmt.Sprint(2*n), "NH", fmt.Sprint(n/2),
		"N1", fmt.Sprint(n+1), "M2", fmt.Sprint(m+2), "M", fmt.Sprint(m), "N", fmt.Sprint(n))
	return r.Replace(src)
}

func TestLoopKernels(t *testing.T) {
	for _, c := range loopCases {
		for _, s := range loopShapes {
			m, n := s[0], s[1]
			if c.name == "strided_slice" && n < 2 {
				continue
			}
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, m, n), func(t *testing.T) {
				g := parse(t, instantiate(c.src, m, n))
				checkKernel(t, Kernel{Name: "k_" + c.name, Graph: g}, inputsFor(g, uint64(m*n), 3), true)
			})
		}
	}
}

func TestGather(t *testing.T) {
	for _, dt := range []string{"i32", "i64"} {
		t.Run(dt, func(t *testing.T) {
			g := parse(t, `graph g {
  param %table : f32[50,24]
  input %ids : `+dt+`[3,7]
  %0 = gather(%table, %ids) : f32[3,7,24]
  output y = %0
}`)
			in := inputsFor(g, 3, 1)
			for i := range in["ids"].I {
				in["ids"].I[i] = int64((i * 17) % 50)
			}
			checkKernel(t, Kernel{Name: "k_embed", Graph: g}, in, true)
			text, launches, err := Module([]Kernel{{Name: "k_embed", Graph: g}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if want := []IndexCheck{{Site: 1, Op: "%0 = gather(%table, %ids) : f32[3,7,24]", Indices: "ids", Table: "f32[50,24]", Rows: 50,
				Value: g.Outputs[0].Value}}; fmt.Sprint(launches[0].Checks) != fmt.Sprint(want) {
				t.Errorf("checks %+v, want %+v", launches[0].Checks, want)
			}
			// In range: the error word stays zero.
			run, err := launchSim(t, text, "k_embed", launches[0], g, in)
			if err != nil {
				t.Fatal(err)
			}
			if site, elem, value := run.errorWord(t); site != 0 || elem != 0 || value != 0 {
				t.Errorf("error word %d %d %d after a launch with every index in range", site, elem, value)
			}
			// An index outside the table (past the end, or negative) is recorded with its element
			// and value instead of reading another row; the launch itself completes.
			for _, bad := range []struct {
				elem  int
				value int64
			}{{5, 50}, {20, -1}, {0, 1 << 40}} {
				if dt == "i32" && bad.value > 1<<31 {
					continue
				}
				in := map[string]*tensor.Tensor{"table": in["table"], "ids": in["ids"].Clone()}
				in["ids"].I[bad.elem] = bad.value
				run, err := launchSim(t, text, "k_embed", launches[0], g, in)
				if err != nil {
					t.Fatalf("index %d: %v", bad.value, err)
				}
				if site, elem, value := run.errorWord(t); site != 1 || elem != uint64(bad.elem) || value != bad.value {
					t.Errorf("index %d at element %d: error word site %d, element %d, value %d", bad.value, bad.elem, site, elem, value)
				}
			}
		})
	}
}

// asmcheck-style properties of loop kernels.
func TestLoopAsm(t *testing.T) {
	g := parse(t, instantiate(loopCases[0].src, 64, 256))
	text, _, err := Generate(Kernel{Name: "k_bias_relu", Graph: g}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`ld\.global\.v4\.f32`, `st\.global\.v4\.f32`, `// k_bias_relu fuses:\n//   %0 = broadcast_in_dim`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("missing %s in\n%s", re, text)
		}
	}
	if n := len(regexp.MustCompile(`st\.global`).FindAllString(text, -1)); n != 1 {
		t.Errorf("%d st.global, want 1 (no tail: 256 is a multiple of 4)", n)
	}
	// Deterministic bytes.
	again, _, _ := Generate(Kernel{Name: "k_bias_relu", Graph: g}, Target{SM: 80})
	if again != text {
		t.Error("two generations differ")
	}
}

// A transposed read is staged through a shared-memory tile: loads and stores both coalesced.
func TestTransposeTile(t *testing.T) {
	g := parse(t, instantiate(loopCases[1].src, 96, 160))
	res := checkKernel(t, Kernel{Name: "k_transpose_mul", Graph: g}, inputsFor(g, 5, 1), true)
	if res == nil {
		return
	}
	if !regexp.MustCompile(`st\.shared\.f32`).MatchString(res.ptx) {
		t.Error("no shared-memory tile")
	}
	st := res.stats
	ld := float64(st.GlobalLoadBytes) / float64(32*st.GlobalLoadSectors)
	sto := float64(st.GlobalStoreBytes) / float64(32*st.GlobalStoreSectors)
	if ld < 0.9 || sto < 0.9 || st.SharedBankConflicts != 0 {
		t.Errorf("load efficiency %.2f, store efficiency %.2f, %d bank conflicts", ld, sto, st.SharedBankConflicts)
	}
}

// Edge shapes: a literal tensor (a module-level array), empty tensors, empty reductions, scalars.
func TestEdgeShapes(t *testing.T) {
	cases := map[string]string{
		"literal": `graph g {
  input %x : f32[2,3]
  %0 = constant() {dtype=f32, shape=[2,3], value=[1,-2,3.5,0.25,-0,7]} : f32[2,3]
  %1 = constant() {dtype=i8, shape=[3], value=[1,-2,3]} : i8[3]
  %2 = cast(%1) {to=f32} : f32[3]
  %3 = broadcast_in_dim(%2) {dims=[1], shape=[2,3]} : f32[2,3]
  %4 = mul(%x, %0) : f32[2,3]
  %5 = add(%4, %3) : f32[2,3]
  output y = %5
}`,
		"empty_loop": `graph g {
  input %x : f32[0,5]
  %0 = neg(%x) : f32[0,5]
  output y = %0
}`,
		"empty_reduction": `graph g {
  input %x : f32[3,0]
  %0 = reduce_sum(%x) {axes=[1]} : f32[3]
  %1 = reduce_max(%x) {axes=[1]} : f32[3]
  output s = %0
  output m = %1
}`,
		"scalar": `graph g {
  input %x : f32[]
  input %y : f32[]
  %0 = div(%x, %y) : f32[]
  output z = %0
}`,
	}
	for _, name := range []string{"literal", "empty_loop", "empty_reduction", "scalar"} {
		t.Run(name, func(t *testing.T) {
			g := parse(t, cases[name])
			checkKernel(t, Kernel{Name: "k_" + name, Graph: g}, inputsFor(g, 1, 2), true)
		})
	}
}

// 16-bit loop kernels move eight elements per 128-bit access.
func TestLoopAsmHalf(t *testing.T) {
	g := parse(t, `graph g {
  input %x : bf16[16,64]
  input %y : bf16[16,64]
  %0 = mul(%x, %y) : bf16[16,64]
  output a = %0
}`)
	checkKernel(t, Kernel{Name: "k_f16", Graph: g}, inputsFor(g, 3, 2), true)
	text, _, err := Generate(Kernel{Name: "k_f16", Graph: g}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text, "ld.global.v4.b32"); n != 2 {
		t.Errorf("%d ld.global.v4.b32, want 2 (x and y)", n)
	}
	if n := strings.Count(text, "st.global.v4.b32"); n != 1 {
		t.Errorf("%d st.global.v4.b32, want 1 (output a)", n)
	}
}

// Unsupported fusions are errors naming the kernel and the reason, never code.
func TestUnsupportedFusions(t *testing.T) {
	cases := []struct{ src, want string }{
		{`graph g {
  input %x : f32[1,2,6,6]
  param %w : f32[3,2,3,3]
  %0 = conv2d(%x, %w) : f32[1,3,4,4]
  %1 = reduce_sum(%0) {axes=[2,3]} : f32[1,3]
  output y = %1
}`, "k7: a kernel fusing conv2d and reduce is not a supported fusion"},
		{`graph g {
  input %x : f32[4,8]
  %0 = reduce_sum(%x) {axes=[1]} : f32[4]
  %1 = reduce_sum(%x) {axes=[0]} : f32[8]
  output a = %0
  output b = %1
}`, "k7: reductions over different shapes or axes"},
		{`graph g {
  input %x : f32[4,8]
  input %y : f32[8,4]
  %0 = neg(%x) : f32[4,8]
  output a = %0
  output b = %y
}`, "k7: outputs a [4,8] and b [8,4] have different shapes"},
	}
	for _, c := range cases {
		g := parse(t, c.src)
		_, _, err := Generate(Kernel{Name: "k7", Graph: g}, Target{SM: 80})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// A concat whose operands lie off 32-byte sector boundaries in the output stages the tile
// through shared memory, so each operand is read from its own sector boundary and the output
// written from its own: both at least 90% coalesced (rnn's cat of 57 and 128 floats would
// otherwise read 83%). Aligned concats keep the loop template.
func TestConcatTile(t *testing.T) {
	// coalesced: loads and stores are held to 90% (small 8- and 16-bit pieces lose more than
	// 10% to the partial sectors at their ends).
	cases := []stagedCase{
		{"rnn_cat", `graph g {
  input %x : f32[1,57]
  input %h : f32[1,128]
  %0 = concat(%x, %h) {axis=1} : f32[1,185]
  output y = %0
}`, true, true},
		{"rows_sin_reshape", `graph g {
  input %x : f32[40,57]
  input %h : f32[40,300]
  %0 = sin(%x) : f32[40,57]
  %1 = concat(%0, %h) {axis=1} : f32[40,357]
  %2 = mul(%1, %1) : f32[40,357]
  %3 = reshape(%2) {shape=[14280]} : f32[14280]
  output y = %3
}`, true, true},
		{"axis0_three_f16", `graph g {
  input %a : f16[3,5,7]
  input %b : f16[1,5,7]
  input %c : f16[30,5,7]
  %0 = concat(%a, %b, %c) {axis=0} : f16[34,5,7]
  output y = %0
}`, true, false},
		{"i8_and_output", `graph g {
  input %a : i8[9,3]
  input %b : i8[9,70]
  %0 = concat(%a, %b) {axis=1} : i8[9,73]
  %1 = add(%0, %0) : i8[9,73]
  output y = %1
  output z = %0
}`, true, false},
		{"aligned", `graph g {
  input %a : f32[4,64]
  input %b : f32[4,32]
  %0 = concat(%a, %b) {axis=1} : f32[4,96]
  output y = %0
}`, false, false},
	}
	checkStaged(t, cases)
}

// generateCase parses src into kernel k_name and generates it for sm_80.
func generateCase(t *testing.T, name, src string) (Kernel, string) {
	t.Helper()
	k := Kernel{Name: "k_" + name, Graph: parse(t, src)}
	text, _, err := Generate(k, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	return k, text
}

// stagedCase is a loop kernel that does (or does not) take the staged template.
type stagedCase struct {
	name, src         string
	staged, coalesced bool
}

// checkStaged checks each case's template choice and results, and with coalesced that its
// loads and stores are at least 90% coalesced.
func checkStaged(t *testing.T, cases []stagedCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, text := generateCase(t, c.name, c.src)
			if got := strings.Contains(text, "staged"); got != c.staged {
				t.Fatalf("staged: %v, want %v", got, c.staged)
			}
			res := checkKernel(t, k, inputsFor(k.Graph, 5, 2), true)
			if res == nil || !c.coalesced {
				return
			}
			st := res.stats
			for _, e := range []struct {
				what        string
				bytes, secs int64
			}{{"loads", int64(st.GlobalLoadBytes), int64(st.GlobalLoadSectors)}, {"stores", int64(st.GlobalStoreBytes), int64(st.GlobalStoreSectors)}} {
				if eff := float64(e.bytes) / float64(32*e.secs); eff < 0.9 {
					t.Errorf("%s %.0f%% coalesced", e.what, 100*eff)
				}
			}
		})
	}
}

// Nearest upsampling (a broadcast that repeats each element r times along a new last axis,
// merged into the row by a reshape) keeps a vectorized group: lane j reads element j/r of a
// group of n/r consecutive input elements, one vector load for all of them (two scalar loads
// of the same float per output pair before, 67% coalesced in unet's concat kernels). Where r
// does not divide the group, or the rows are too short, each lane loads on its own; the
// results match the reference either way.
func TestRepeatGroup(t *testing.T) {
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
	cases := []struct {
		name, src string
		vector    string // the vector load of x the kernel must hold ("" for none)
		coalesced bool
	}{
		{"f32_x2", upsample("f32", 8, 8, 2, false), "ld.global.v2.f32", true},
		{"f32_x2_concat", upsample("f32", 8, 8, 2, true), "ld.global.v2.f32", true},
		{"f32_x4", upsample("f32", 4, 8, 4, false), "", true}, // r = n: one scalar load per group
		{"f16_x2", upsample("f16", 8, 16, 2, false), "ld.global.v4.b16", true},
		{"f32_x3", upsample("f32", 5, 4, 3, false), "", false}, // 12-wide rows: r does not divide 4
		{"f32_odd", upsample("f32", 3, 3, 2, false), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, text := generateCase(t, c.name, c.src)
			if c.vector != "" && !strings.Contains(text, c.vector) {
				t.Errorf("no %s in the kernel:\n%s", c.vector, text)
			}
			res := checkKernel(t, k, inputsFor(k.Graph, 9, 2), true)
			if res == nil || !c.coalesced {
				return
			}
			if eff := float64(res.stats.GlobalLoadBytes) / float64(32*res.stats.GlobalLoadSectors); eff < 0.9 {
				t.Errorf("loads %.0f%% coalesced", 100*eff)
			}
		})
	}
}
