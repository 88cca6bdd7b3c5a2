package passes

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestCostPDLBound: at sm_90 the report counts the kernels launched as programmatic dependent
// launches after the first of a run and gives, labelled as an assumption, the CUDA-graph time if
// each hid its whole launch; the modeled times themselves are those of sm_80, which reports
// neither. Bind-time kernels are not in a run.
func TestCostPDLBound(t *testing.T) {
	const body = `  input %x : f32[1,512]
  param %w1 : f32[512,512]
  param %w2 : f32[512,512]
  param %s : f32[512,512]
  %ws = mul(%w2, %s) : f32[512,512]
  %h = dot_general(%x, %w1) {lhs_contract=[1], rhs_contract=[0]} : f32[1,512]
  %a = tanh(%h) : f32[1,512]
  %y = dot_general(%a, %ws) {lhs_contract=[1], rhs_contract=[0]} : f32[1,512]
  output y = %y`
	stats := map[int]*Stats{}
	for _, sm := range []int{80, 90} {
		res, err := Run(parse(t, body), Options{SM: sm})
		if err != nil {
			t.Fatal(err)
		}
		stats[sm] = res.Stats
	}
	s80, s90 := stats[80], stats[90]
	if s90.ModeledGraphTimeUS != s80.ModeledGraphTimeUS || s90.ModeledTimeUS != s80.ModeledTimeUS || s90.Kernels != s80.Kernels {
		t.Errorf("sm_90 models %v µs (graph %v) for sm_80's %v (%v): the default model changed", s90.ModeledTimeUS, s90.ModeledGraphTimeUS, s80.ModeledTimeUS, s80.ModeledGraphTimeUS)
	}
	if s80.PDLKernels != 0 || s80.ModeledGraphPDLBoundUS != 0 {
		t.Errorf("sm_80: %d PDL kernels, bound %v", s80.PDLKernels, s80.ModeledGraphPDLBoundUS)
	}
	if s90.BindKernels == 0 || s90.Kernels < 2 {
		t.Fatalf("want a bind-time kernel and two per run: %d and %d", s90.BindKernels, s90.Kernels)
	}
	if s90.PDLKernels != s90.Kernels-1 {
		t.Errorf("sm_90: %d PDL kernels of %d per run, want all but the first", s90.PDLKernels, s90.Kernels)
	}
	if want := s90.ModeledKernelTimeUS + graphLaunchUS; math.Abs(s90.ModeledGraphPDLBoundUS-want) > 1e-9 {
		t.Errorf("sm_90 bound %v µs, want the kernels and one launch, %v", s90.ModeledGraphPDLBoundUS, want)
	}
	for sm, s := range stats {
		var b bytes.Buffer
		s.WriteTable(&b)
		if got := strings.Contains(b.String(), "assumption, not the model"); got != (sm == 90) {
			t.Errorf("sm_%d: the table's assumption line present: %v", sm, got)
		}
		if got := strings.Contains(string(s.JSON()), "pdl"); got != (sm == 90) {
			t.Errorf("sm_%d: pdl fields in the JSON: %v", sm, got)
		}
	}
}
