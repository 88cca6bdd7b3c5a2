package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadMNISTFixture(t *testing.T) {
	train, test, err := LoadMNIST(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d        *Images
		n, first int
	}{{train, 64, 0}, {test, 16, 64}} {
		if c.d.N != c.n || c.d.Images.Type.String() != fmt.Sprintf("f32[%d,1,28,28]", c.n) || c.d.Labels.Type.String() != fmt.Sprintf("i64[%d]", c.n) {
			t.Fatalf("%s: N=%d images %s labels %s", c.d.Name, c.d.N, c.d.Images.Type, c.d.Labels.Type)
		}
		for i := range c.n {
			if got, want := c.d.Labels.I[i], int64(fixtureLabel(c.first+i)); got != want {
				t.Fatalf("%s: label %d = %d, want %d", c.d.Name, i, got, want)
			}
			for _, rc := range [][2]int{{0, 0}, {5, 17}, {27, 27}} {
				got := c.d.Images.F[i*784+rc[0]*28+rc[1]]
				if want := float64(float32(fixturePixel(c.first+i, rc[0], rc[1])) / 255); got != want {
					t.Fatalf("%s: image %d pixel %v = %v, want %v", c.d.Name, i, rc, got, want)
				}
			}
		}
	}
	if v := pixel[255]; v != 1 {
		t.Errorf("pixel 255 is %v, want 1", v)
	}
}

func TestSlice(t *testing.T) {
	train, _, err := LoadMNIST(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := train.Slice(10, 13)
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 3 || s.Labels.I[0] != train.Labels.I[10] || s.Images.F[784] != train.Images.F[11*784] || !strings.HasSuffix(s.Name, "[10:13]") {
		t.Errorf("slice: N=%d name %s", s.N, s.Name)
	}
	s.Images.F[0] = 42
	if train.Images.F[10*784] == 42 {
		t.Error("slice shares memory with its dataset")
	}
	if _, err := train.Slice(3, 65); err == nil || !strings.Contains(err.Error(), "slice [3:65] of 64 examples") {
		t.Errorf("bad slice: err = %v", err)
	}
}

// copyFixture copies the fixture into a new directory and applies edit to the arrays by file name.
func copyFixture(t *testing.T, edit func(files map[string]*Array)) string {
	dir := t.TempDir()
	files := fixtureArrays()
	edit(files)
	for name, a := range files {
		if a == nil {
			continue
		}
		if err := WriteIDXFile(filepath.Join(dir, name), a); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		name string
		dir  string
		want string
	}{
		{"no directory", missing, "data: stat " + missing + ": no such file or directory"},
		{"no file", copyFixture(t, func(f map[string]*Array) { f[TestLabels+".gz"] = nil }), "neither t10k-labels-idx1-ubyte nor t10k-labels-idx1-ubyte.gz exists"},
		{"label count", copyFixture(t, func(f map[string]*Array) { f[TrainLabels] = &Array{Type: U8, Dims: []int{2}, Data: []byte{1, 2}} }),
			"train-labels-idx1-ubyte has 2 labels, "},
		{"images type", copyFixture(t, func(f map[string]*Array) { f[TestImages].Type = I8 }), "holds i8[16 28 28], want images u8[N,H,W]"},
		{"labels rank", copyFixture(t, func(f map[string]*Array) { f[TestLabels+".gz"].Dims = []int{4, 4} }), "holds u8[4 4], want labels u8[N]"},
		{"empty images", copyFixture(t, func(f map[string]*Array) { f[TestImages] = &Array{Type: U8, Dims: []int{16, 0, 28}, Data: []byte{}} }), "images of 0x28 pixels"},
		{"image sizes differ", copyFixture(t, func(f map[string]*Array) {
			f[TestImages] = &Array{Type: U8, Dims: []int{16, 2, 2}, Data: make([]byte, 64)}
		}), "training images are 28x28, test images 2x2"},
		{"corrupt file", copyFixture(t, func(f map[string]*Array) { f[TrainImages+".gz"] = nil }), "train-images-idx3-ubyte: unknown element type 0x42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "corrupt file" {
				os.WriteFile(filepath.Join(tc.dir, TrainImages), []byte{0, 0, 0x42, 0}, 0o644)
			}
			_, _, err := LoadMNIST(tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
}

func TestFashionMNISTChecks(t *testing.T) {
	if _, _, err := FashionMNIST(fixtureDir); err == nil || !strings.Contains(err.Error(), "64 images of 28x28, Fashion-MNIST has 60000 of 28x28") {
		t.Errorf("fixture as Fashion-MNIST: err = %v", err)
	}
	if _, err := os.Stat(FashionMNISTDir); err != nil {
		_, _, err := FashionMNIST("")
		if err == nil || !strings.Contains(err.Error(), "apt-get install dataset-fashion-mnist") {
			t.Errorf("default directory absent: err = %v", err)
		}
	}
}

// fashionDir finds a Fashion-MNIST directory for the tests that want the real data: the
// directory named by $GCOMP_FASHION_MNIST, Debian's, or .cache/fashion-mnist at the repository
// root (where a developer may unpack the Debian package without installing it). It skips the
// test when there is none.
func fashionDir(t *testing.T) string {
	if testing.Short() {
		t.Skip("-short: not reading Fashion-MNIST")
	}
	dirs := []string{os.Getenv("GCOMP_FASHION_MNIST"), FashionMNISTDir}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dirs = append(dirs, filepath.Join(d, ".cache", "fashion-mnist"))
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, TrainLabels+".gz")); err == nil {
			return d
		}
	}
	t.Skip("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")
	return ""
}

// The real Fashion-MNIST, when present: sizes, balanced classes, the first labels, pixel range.
func TestFashionMNISTReal(t *testing.T) {
	train, test, err := FashionMNIST(fashionDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d        *Images
		perClass int
		first    []int64
	}{{train, 6000, []int64{9, 0, 0, 3, 0}}, {test, 1000, []int64{9, 2, 1, 1, 6}}} {
		count := make([]int, 10)
		for _, l := range c.d.Labels.I {
			count[l]++
		}
		for k, n := range count {
			if n != c.perClass {
				t.Errorf("%s: class %d has %d examples, want %d", c.d.Name, k, n, c.perClass)
			}
		}
		for i, want := range c.first {
			if got := c.d.Labels.I[i]; got != want {
				t.Errorf("%s: label %d = %d, want %d", c.d.Name, i, got, want)
			}
		}
		lo, hi := 1.0, 0.0
		for _, v := range c.d.Images.F[:784*100] {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo != 0 || hi != 1 {
			t.Errorf("%s: pixels of the first 100 images in [%v, %v], want [0, 1]", c.d.Name, lo, hi)
		}
	}
}
