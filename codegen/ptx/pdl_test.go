package ptx

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// touchModule's kernel stands for the kernel before a dependent launch: it waits for its own
// predecessor, lets its dependent start, then copies n bytes from src to dst (the dependent's
// input), so everything it writes is what the dependent may not read before its wait.
const touchModule = `.version 7.8
.target sm_90
.address_size 64
.visible .entry touch(.param .u64 dst, .param .u64 src, .param .u64 n)
{
	.reg .pred %p<2>;
	.reg .b16 %h<2>;
	.reg .b64 %rd<8>;
	griddepcontrol.wait;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd1, [dst];
	ld.param.u64 %rd2, [src];
	ld.param.u64 %rd3, [n];
	mov.u64 %rd4, 0;
$loop:
	setp.ge.u64 %p1, %rd4, %rd3;
	@%p1 bra $done;
	add.s64 %rd5, %rd2, %rd4;
	add.s64 %rd6, %rd1, %rd4;
	ld.global.u8 %h1, [%rd5];
	st.global.u8 [%rd6], %h1;
	add.s64 %rd4, %rd4, 1;
	bra $loop;
$done:
	ret;
}
`

var pdlCases = []struct {
	name, src string
	preload   bool            // the GEMV loads its first weights before the wait
	params    map[string]bool // Kernel.ParamInputs
}{
	{name: "gemv_compiled_weight", src: `graph g {
  input %x : f32[1,256]
  input %w : f32[256,64]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,64]
  output y = %0
}`, preload: true, params: map[string]bool{"w": true}}, // the compiler's kernels take parameters as inputs
	{"gemv_kn_f32", strings.ReplaceAll(instantiateMNK(gemvCases[0].src, 1, 64, 700), "T[", "f32["), true, nil},
	{"gemv_nk_bf16", strings.ReplaceAll(instantiateMNK(gemvCases[1].src, 2, 40, 520), "T[", "bf16["), true, nil},
	{"gemv_bias_residual", strings.ReplaceAll(instantiateMNK(gemvCases[2].src, 1, 96, 300), "T[", "f32["), true, nil},
	{"gemv_layernorm", normGEMV("layernorm_bias", "f32", 1, 64, 256, false), true, nil},
	{"gemv_rmsnorm_nk", normGEMV("rmsnorm", "f16", 2, 48, 256, true), true, nil},
	{"gemv_int4_nk", quantGEMV("nk", "f32", "u8", 1, 64, 256, 4, 32, true), true, nil},
	{"gemv_int8_kn", quantGEMV("kn", "f32", "i8", 1, 64, 256, 8, 256, false), true, nil},
	{"gemv_int8_kn_f16_zero", quantGEMV("kn", "f16", "i8", 3, 48, 320, 8, 320, true), true, nil},
	{"gemv_int8_kn_elements", quantGEMV("kn", "f32", "i8", 1, 64, 256, 8, 64, false), false, nil},              // element loads
	{"gemv_odd_n", strings.ReplaceAll(instantiateMNK(gemvCases[0].src, 1, 63, 300), "T[", "f16["), false, nil}, // element loads: no preload
	{"gemv_activation_rhs", `graph g {
  input %x : f32[1,256]
  input %w : f32[256,64]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,64]
  output y = %0
}`, false, nil}, // a weight some kernel writes: waits first
	{"loop", `graph g {
  input %x : f32[1000]
  param %b : f32[1000]
  %0 = add(%x, %b) : f32[1000]
  %1 = tanh(%0) : f32[1000]
  output y = %1
}`, false, nil},
	{"reduce", `graph g {
  input %x : f32[8,300]
  %0 = reduce_sum(%x) {axes=[1]} : f32[8]
  output y = %0
}`, false, nil},
}

// TestPDLKernels: at sm_90 every entry starts with launch_dependents and is marked PDL, the GEMV
// loads its first parameter weights before its wait, and run as a dependent launch after a
// kernel that wrote its inputs it passes the simulator's dependent-launch check and equals the
// reference; the same entry with its wait moved to the end fails the check. At sm_80 nothing
// changes: no griddepcontrol, no PDL mark.
func TestPDLKernels(t *testing.T) {
	for _, c := range pdlCases {
		t.Run(c.name, func(t *testing.T) {
			g := parse(t, c.src)
			k := Kernel{Name: "k_" + c.name, Graph: g, ParamInputs: c.params}
			old, l80, err := Module([]Kernel{k}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(old, "griddepcontrol") || l80[0].PDL {
				t.Fatalf("sm_80: griddepcontrol or a PDL launch (%v)", l80[0].PDL)
			}
			text, ls, err := Module([]Kernel{k}, Target{SM: 90})
			if err != nil {
				t.Fatal(err)
			}
			l := ls[0]
			if !l.PDL {
				t.Error("sm_90 launch not marked PDL")
			}
			body := text[strings.Index(text, "\n{\n"):]
			if got := firstNonDecl(body); got != depLaunch+";" {
				t.Errorf("first instruction %q, want %s", got, depLaunch)
			}
			if n := strings.Count(text, depWait+";"); n != 1 {
				t.Errorf("%d waits, want 1", n)
			}
			pre := text[:strings.Index(text, depWait+";")]
			if loads := regexp.MustCompile(`ld\.global`).MatchString(pre); loads != c.preload {
				t.Errorf("global loads before the wait: %v, want %v", loads, c.preload)
			}
			if regexp.MustCompile(`st\.global|atom\.|red\.`).MatchString(pre) {
				t.Error("a store before the wait")
			}
			assembleArch(t, text, "sm_90")
			in := inputsFor(g, 7, 1)
			got, err := runDependent(t, text, k, l, in)
			if err != nil {
				t.Fatalf("dependent launch: %v", err)
			}
			want, err := ref.Run(g, pick(g.Inputs(), in), pick(g.Params(), in))
			if err != nil {
				t.Fatal(err)
			}
			k2, scale := contraction(g, in)
			for _, o := range g.Outputs {
				compare(t, o.Name, got[o.Name], want[o.Name], false, precision(o.Value), k2, scale)
			}
			// The wait moved to the end: the inputs are read before it.
			late := strings.Replace(text, "\t"+depWait+";\n", "", 1)
			late = strings.Replace(late, "\tret;\n}", "\t"+depWait+";\n\tret;\n}", 1)
			if _, err := runDependent(t, late, k, l, in); err == nil || !strings.Contains(err.Error(), "dependent-launch race") {
				t.Errorf("wait at the end: error %v, want a dependent-launch race", err)
			}
		})
	}
}

// firstNonDecl is the first line of an entry's body (after "{") that declares nothing.
func firstNonDecl(body string) string {
	for _, line := range strings.Split(body, "\n")[2:] {
		s := strings.TrimSpace(line)
		if s == "" || strings.HasPrefix(s, ".reg") || strings.HasPrefix(s, ".shared") || strings.HasPrefix(s, "//") {
			continue
		}
		return s
	}
	return ""
}

// runDependent runs text's kernel k as a dependent launch after touch kernels that wrote each of
// its inputs (the parameters, and the inputs k.ParamInputs names, written by the host alone),
// with every check on, and returns its outputs.
func runDependent(t *testing.T, text string, k Kernel, l Launch, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	t.Helper()
	kernel, g := k.Name, k.Graph
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatalf("sim load: %v", err)
	}
	touch, err := dev.Load(touchModule)
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(n int, data []byte) uint64 {
		a, err := dev.Alloc(max(n, 1))
		if err != nil {
			t.Fatal(err)
		}
		if data != nil {
			if err := dev.Write(a, data); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	var args []any
	outs := map[string]uint64{}
	one := sim.Config{Grid: sim.Dim3{X: 1, Y: 1, Z: 1}, Block: sim.Dim3{X: 1, Y: 1, Z: 1}, Dependent: true}
	for _, a := range l.Params {
		var addr uint64
		switch a.Kind {
		case ArgParam:
			addr = alloc(in[a.Name].Type.Bytes(), in[a.Name].Bytes())
		case ArgInput:
			if k.ParamInputs[a.Name] {
				addr = alloc(in[a.Name].Type.Bytes(), in[a.Name].Bytes())
				break
			}
			x := in[a.Name]
			addr = alloc(x.Type.Bytes(), nil)
			src := alloc(x.Type.Bytes(), x.Bytes())
			if _, err := touch.Launch("touch", one, addr, src, uint64(x.Type.Bytes())); err != nil {
				t.Fatal(err)
			}
		case ArgOutput:
			addr = alloc(g.Outputs[a.Index].Value.Type.Bytes(), nil)
			outs[a.Name] = addr
		case ArgScratch:
			addr = alloc(a.Bytes, make([]byte, a.Bytes))
		case ArgError:
			addr = alloc(ErrorWordBytes, make([]byte, ErrorWordBytes))
		default:
			t.Fatalf("argument kind %v", a.Kind)
		}
		args = append(args, addr)
	}
	cfg := sim.Config{Grid: sim.Dim3{X: l.Grid[0], Y: l.Grid[1], Z: l.Grid[2]},
		Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}, SharedBytes: l.SharedBytes, Dependent: true}
	if _, err := m.Launch(kernel, cfg, args...); err != nil {
		return nil, err
	}
	got := map[string]*tensor.Tensor{}
	for _, o := range g.Outputs {
		buf := make([]byte, o.Value.Type.Bytes())
		if err := dev.Read(outs[o.Name], buf); err != nil {
			t.Fatal(err)
		}
		x, err := tensor.FromBytes(o.Value.Type, buf)
		if err != nil {
			t.Fatal(err)
		}
		got[o.Name] = x
	}
	return got, nil
}

// TestPDLShareKey: at sm_90 two kernels of one graph share an entry only if the same inputs are
// parameters (the entry loads them before its wait); at sm_80 they share one entry as before.
func TestPDLShareKey(t *testing.T) {
	const src = `graph g {
  input %x : f32[1,256]
  input %w : f32[256,64]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,64]
  output y = %0
}`
	ks := []Kernel{
		{Name: "k0", Graph: parse(t, src), ParamInputs: map[string]bool{"w": true}},
		{Name: "k1", Graph: parse(t, src)},
		{Name: "k2", Graph: parse(t, src), ParamInputs: map[string]bool{"w": true}},
	}
	for _, c := range []struct {
		sm      int
		entries []string
	}{{80, []string{"k0", "k0", "k0"}}, {90, []string{"k0", "k1", "k0"}}} {
		_, ls, err := Module(ks, Target{SM: c.sm})
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range ls {
			if l.Entry != c.entries[i] {
				t.Errorf("sm_%d: %s runs %s, want %s", c.sm, ks[i].Name, l.Entry, c.entries[i])
			}
		}
	}
}
