package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gcomp/gcomp/internal/golden"
)

// fixtureDir is a tiny MNIST-like directory: 64 training and 16 test images of 28×28, two of
// the four files gzip-compressed, as Debian ships them, and two plain.
const fixtureDir = "testdata/mnist"

// fixtureLabel and fixturePixel define the fixture's content: a pattern that differs from image
// to image and from row to row, and labels that cycle through 0 to 9.
func fixtureLabel(n int) byte { return byte((n*7 + 3) % 10) }

func fixturePixel(n, r, c int) byte {
	return byte((n*31 + r*7 + c*13 + int(fixtureLabel(n))*17) & 0xff)
}

// fixtureArrays returns the arrays of the four files of fixtureDir.
func fixtureArrays() map[string]*Array {
	files := map[string]*Array{}
	for _, s := range []struct {
		images, labels string
		n, first       int
	}{{TrainImages + ".gz", TrainLabels, 64, 0}, {TestImages, TestLabels + ".gz", 16, 64}} {
		im := &Array{Type: U8, Dims: []int{s.n, 28, 28}}
		lb := &Array{Type: U8, Dims: []int{s.n}}
		for i := range s.n {
			n := s.first + i
			for r := range 28 {
				for c := range 28 {
					im.Data = append(im.Data, fixturePixel(n, r, c))
				}
			}
			lb.Data = append(lb.Data, fixtureLabel(n))
		}
		files[s.images], files[s.labels] = im, lb
	}
	return files
}

// TestFixture checks the committed fixture against its definition; -update writes it.
func TestFixture(t *testing.T) {
	for name, want := range fixtureArrays() {
		path := filepath.Join(fixtureDir, name)
		if golden.Updating() {
			if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := WriteIDXFile(path, want); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := ReadIDXFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s differs from its definition (-want +got):\n%s", path, diff)
		}
	}
}
