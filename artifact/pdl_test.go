package artifact_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
)

// TestPlanPDL: a launch's "pdl" flag reads back, and only a plan for sm_90 or later may carry it
// (griddepcontrol is sm_90's); a plan's target that names no architecture carries none.
func TestPlanPDL(t *testing.T) {
	good := string(compiled(t).Plan.JSON())
	if strings.Contains(good, `"pdl"`) {
		t.Fatal(`an sm_80 plan has "pdl"`)
	}
	marked := strings.Replace(good, `"shared_bytes": 0,`, `"shared_bytes": 0, "pdl": true,`, 1)
	for _, c := range []struct {
		target, want string
	}{
		{"sm_90", ""},
		{"sm_100", ""},
		{"sm_80", "a programmatic dependent launch needs sm_90 or later, the plan's target is sm_80"},
		{"sm_89", "the plan's target is sm_89"},
		{"gfx90a", "the plan's target is gfx90a"},
		{"sm_", "the plan's target is sm_"},
	} {
		p, err := artifact.ParsePlan([]byte(strings.Replace(marked, `"target": "sm_80"`, `"target": "`+c.target+`"`, 1)))
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want %q", c.target, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.target, err)
		}
		if !p.Kernels[0].PDL {
			t.Errorf("%s: the flag did not read back", c.target)
		}
	}
}
