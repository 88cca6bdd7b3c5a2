package train

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// A checkpoint holds the parameters under their own names and the state under the step's input
// names, and reads back to the same values; a checkpoint of another step is rejected with the
// reason.
func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, _, tr, _ := tinyStep(t, NewAdam(), Options{AMP: "f16"})
	path := filepath.Join(dir, "ck.safetensors")
	if err := s.SaveCheckpoint(path, tr.Params, tr.State, map[string]string{"gcomp.epoch": "1"}); err != nil {
		t.Fatal(err)
	}
	arrays, meta, err := tensorio.ReadSafetensorsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range arrays {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"amp.growth_tracker", "amp.scale", "b", "opt.b.exp_avg", "opt.b.exp_avg_sq", "opt.step", "opt.w.exp_avg", "opt.w.exp_avg_sq", "w"}
	if !slices.Equal(names, want) {
		t.Errorf("tensors %v, want %v", names, want)
	}
	if meta["format"] != "pt" || meta[MetaOptimizer] != "adam" || meta[MetaAMP] != "f16" || meta["gcomp.epoch"] != "1" {
		t.Errorf("metadata %v", meta)
	}
	p, st, _, err := s.LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range tr.Params {
		if !slices.Equal(p[name].F, v.F) {
			t.Errorf("parameter %s read back as %v, want %v", name, p[name].F, v.F)
		}
	}
	for name, v := range tr.State {
		if !slices.Equal(st[name].F, v.F) || !slices.Equal(st[name].I, v.I) {
			t.Errorf("state %s read back as %v, want %v", name, st[name], v)
		}
	}

	write := func(name string, edit func(map[string]*tensorio.Array, map[string]string)) string {
		a, m, err := tensorio.ReadSafetensorsFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edit(a, m)
		p := filepath.Join(dir, name)
		if err := tensorio.WriteSafetensorsFile(p, a, m); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sgd, err := Step("tiny", tinyLinear, NewSGD(0.1), Options{AMP: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	bf16, err := Step("tiny", tinyLinear, NewAdam(), Options{AMP: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		step *StepGraph
		path string
		want string
	}{
		{"other optimizer", sgd, path, `a checkpoint of optimizer "adam", this run uses sgd`},
		{"other amp", bf16, path, `a checkpoint of AMP "f16", this run uses "bf16"`},
		{"missing state", s, write("missing.safetensors", func(a map[string]*tensorio.Array, _ map[string]string) { delete(a, "opt.w.exp_avg") }),
			"has no tensor opt.w.exp_avg (f32[2,3])"},
		{"extra tensor", s, write("extra.safetensors", func(a map[string]*tensorio.Array, _ map[string]string) { a["v"] = a["b"] }),
			"has tensors this step does not have: v"},
		{"wrong type", s, write("type.safetensors", func(a map[string]*tensorio.Array, _ map[string]string) {
			a["amp.scale"] = tensor.New(ir.T(ir.F64)).Array()
		}), "tensor amp.scale is f64[], the step wants f32[]"},
		{"no file", s, filepath.Join(dir, "none.safetensors"), "none.safetensors"},
	} {
		if _, _, _, err := tc.step.LoadCheckpoint(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := s.SaveCheckpoint(filepath.Join(dir, "partial.safetensors"), tr.Params, nil, nil); err == nil {
		t.Errorf("a checkpoint without the state was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "partial.safetensors")); err == nil {
		t.Errorf("a failed checkpoint left a file")
	}
}
