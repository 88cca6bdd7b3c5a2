package sim

import (
	"strings"
	"testing"
)

// depModule's kernels take two buffers a and b of 32 u32 each (and c, written by some):
//   - produce writes a[tid] (a launch earlier kernels depend on), trigger says whether it
//     executes launch_dependents first;
//   - early reads a[tid] before its wait (the race), copying it to c;
//   - waits reads b[tid] (written by no kernel) before its wait and a[tid] after it: c = a + b;
//   - clobber writes b[tid] before its wait, which produce-reads reads;
//   - relay waits first, then triggers and writes c (touches nothing of a); quiet does the same
//     without triggering.
const depModule = `.version 7.8
.target sm_90
.address_size 64
.visible .entry produce(.param .u64 pa, .param .u64 pb)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd1, [pa];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.u32 %r2, %r1, 100;
	st.global.u32 [%rd1], %r2;
	ret;
}
.visible .entry produce_late(.param .u64 pa, .param .u64 pb)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [pa];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.u32 %r2, %r1, 100;
	st.global.u32 [%rd1], %r2;
	ret;
}
.visible .entry produce_reads(.param .u64 pa, .param .u64 pb)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<5>;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd3, [pb];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.s64 %rd3, %rd3, %rd2;
	ld.global.u32 %r2, [%rd3];
	st.global.u32 [%rd1], %r2;
	ret;
}
.visible .entry early(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<5>;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd3, [pc];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.s64 %rd3, %rd3, %rd2;
	ld.global.u32 %r2, [%rd1];
	griddepcontrol.wait;
	st.global.u32 [%rd3], %r2;
	ret;
}
.visible .entry waits(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd4, [pb];
	ld.param.u64 %rd3, [pc];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	add.s64 %rd3, %rd3, %rd2;
	add.s64 %rd4, %rd4, %rd2;
	ld.global.u32 %r3, [%rd4];
	griddepcontrol.wait;
	ld.global.u32 %r2, [%rd1];
	add.u32 %r2, %r2, %r3;
	st.global.u32 [%rd3], %r2;
	ret;
}
.visible .entry clobber(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd4, [pb];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd4, %rd4, %rd2;
	st.global.u32 [%rd4], %r1;
	griddepcontrol.wait;
	ret;
}
.visible .entry relay(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	griddepcontrol.wait;
	griddepcontrol.launch_dependents;
	ld.param.u64 %rd3, [pc];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd3, %rd2;
	st.global.u32 [%rd3], %r1;
	ret;
}
.visible .entry quiet(.param .u64 pa, .param .u64 pb, .param .u64 pc)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	griddepcontrol.wait;
	ld.param.u64 %rd3, [pc];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd3, %rd2;
	st.global.u32 [%rd3], %r1;
	ret;
}
`

// TestDependentLaunchRace runs launch sequences, the later ones dependent, and checks that
// reading or writing before griddepcontrol.wait what a launch still in flight touched is
// reported, and nothing else.
func TestDependentLaunchRace(t *testing.T) {
	type step struct {
		kernel    string
		dependent bool
	}
	cases := []struct {
		name    string
		steps   []step
		noCheck bool
		want    string // substring of the last step's error; "" = no error
		c       uint32 // c[5] after the last step, when it succeeds
	}{
		{name: "reads the previous launch's output before waiting", steps: []step{{"produce", false}, {"early", true}},
			want: "dependent-launch race: this thread reads global byte"},
		{name: "waits before reading it", steps: []step{{"produce", false}, {"waits", true}}, c: 105 + 7},
		{name: "not a dependent launch", steps: []step{{"produce", false}, {"early", false}}, c: 105},
		{name: "previous launch never triggers", steps: []step{{"produce_late", false}, {"early", true}}, c: 105},
		{name: "through a dependent launch that waited", steps: []step{{"produce", false}, {"relay", true}, {"early", true}},
			want: "dependent-launch race"},
		{name: "relayed by a launch that does not trigger", steps: []step{{"produce", false}, {"quiet", true}, {"early", true}}, c: 105},
		{name: "writes what the previous launch read", steps: []step{{"produce_reads", false}, {"clobber", true}},
			want: "this thread writes global byte"},
		{name: "unchecked", steps: []step{{"produce", false}, {"early", true}}, noCheck: true, c: 105},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dev := NewDevice()
			m := load(t, dev, depModule)
			b := make([]uint32, 32)
			for i := range b {
				b[i] = 7
			}
			pa := upload(t, dev, make([]byte, 128))
			pb := upload(t, dev, u32sBytes(b))
			pc := upload(t, dev, make([]byte, 128))
			var err error
			for i, s := range tc.steps {
				cfg := Config{Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}, Dependent: s.dependent, NoCheck: tc.noCheck}
				args := []any{pa, pb}
				if !strings.HasPrefix(s.kernel, "produce") {
					args = append(args, pc)
				}
				_, err = m.Launch(s.kernel, cfg, args...)
				if err != nil && i < len(tc.steps)-1 {
					t.Fatalf("step %d (%s): %v", i, s.kernel, err)
				}
			}
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got error %v, want one containing %q", err, tc.want)
				}
				if e, ok := err.(*Error); !ok || e.Kind != "racecheck" {
					t.Errorf("error %#v is not a racecheck Error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := bytesU32s(download(t, dev, pc, 128))[5]; got != tc.c {
				t.Errorf("c[5] = %d, want %d", got, tc.c)
			}
		})
	}
}

func TestGridDepControlDecode(t *testing.T) {
	for _, tc := range []struct{ ins, want string }{
		{"griddepcontrol.wait;", ""},
		{"griddepcontrol.launch_dependents;", ""},
		{"griddepcontrol;", "needs .launch_dependents or .wait"},
		{"griddepcontrol.sync;", "needs .launch_dependents or .wait"},
		{"griddepcontrol.wait %r1;", "wrong number of operands"},
	} {
		_, err := NewDevice().Load(kernel("", ".reg .b32 %r<2>;\n"+tc.ins+"\nret;"))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.ins, err, tc.want)
		}
	}
}
