package cuda

import (
	"strings"
	"testing"
)

// The device loads the cubin that runs on it, the closest below its compute capability within its
// major version, and otherwise (no such cubin, or the driver refuses it) JIT-compiles the PTX.
func TestLoadBinaries(t *testing.T) {
	ptx := []byte(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k0_add(\n)\n{\n}\n")
	cubins := map[string][]byte{"sm_80": []byte("\x7fELF 80"), "sm_86": []byte("\x7fELF 86"), "sm_90": []byte("\x7fELF 90")}
	for _, tc := range []struct {
		name         string
		major, minor int
		cubins       []string
		noCubin      bool
		want         string // the module's image
	}{
		{"exact", 9, 0, []string{"sm_80", "sm_90"}, false, "sm_90"},
		{"closest below", 8, 9, []string{"sm_80", "sm_86", "sm_90"}, false, "sm_86"},
		{"same major only", 9, 0, []string{"sm_80", "sm_86"}, false, "PTX"},
		{"refused", 8, 0, []string{"sm_80"}, true, "PTX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.major, f.minor, f.noCubin = tc.major, tc.minor, tc.noCubin
			f.kernels["k0_add"] = func(*fakeDriver, []uint64) (Result, Result) { return Success, Success }
			d := openFake(t, f, Options{})
			imgs := map[string][]byte{}
			for _, a := range tc.cubins {
				imgs[a] = cubins[a]
			}
			m, err := d.LoadBinaries(ptx, imgs)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if got := m.(*module).Image(); got != tc.want {
				t.Errorf("loaded %s, want %s", got, tc.want)
			}
			last := string(f.images[len(f.images)-1])
			if tc.want == "PTX" && !strings.HasPrefix(last, ".version") || tc.want != "PTX" && last != string(cubins[tc.want]) {
				t.Errorf("the driver loaded %q last", last)
			}
		})
	}
}
