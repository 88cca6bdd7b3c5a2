package data

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// A CSV file's columns but the target are the inputs, in order; spaces around cells and names
// are ignored; CRLF line ends and quoted cells are CSV's; each row remembers its line.
func TestReadCSV(t *testing.T) {
	d, err := ReadCSV("t.csv", strings.NewReader("a, y ,b\r\n1,2,3\r\n\r\n\" 4\",5e-1, -6\r\n"), "y")
	if err != nil {
		t.Fatal(err)
	}
	if d.X.Type.String() != "f64[2,2]" || !slices.Equal(d.X.F, []float64{1, 3, 4, -6}) ||
		d.Y.Type.String() != "f64[2]" || !slices.Equal(d.Y.F, []float64{2, 0.5}) || !slices.Equal(d.Lines, []int{2, 4}) {
		t.Errorf("read %s %v, %s %v, lines %v", d.X.Type, d.X.F, d.Y.Type, d.Y.F, d.Lines)
	}
	if d.RowName(1) != "t.csv:4" || RowName(d, 1) != "t.csv:4" || Name(d) != "t.csv" || d.Len() != 2 {
		t.Errorf("names %q %q, len %d", d.RowName(1), Name(d), d.Len())
	}
	x, y, err := d.Rows([]int{1, 1, 0})
	if err != nil || !slices.Equal(x.F, []float64{4, -6, 4, -6, 1, 3}) || !slices.Equal(y.F, []float64{0.5, 0.5, 2}) {
		t.Errorf("Rows: %v %v %v", x, y, err)
	}
	if _, _, err := d.Rows([]int{2}); err == nil || !strings.Contains(err.Error(), "row 2 of 2") {
		t.Errorf("row out of range: %v", err)
	}
}

// Each malformed CSV file is one error naming the file and the line.
func TestReadCSVErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "data: f.csv: empty, want a header"},
		{"header only", "a,y\n", "data: f.csv: a header and no rows"},
		{"no target column", "a,b\n1,2\n", `data: f.csv:1: no column "y" (the columns are a, b)`},
		{"target twice", "y,a,y\n1,2,3\n", `data: f.csv:1: two columns named "y"`},
		{"only the target", "y\n1\n", `data: f.csv:1: only the target column "y", no inputs`},
		{"ragged", "a,y\n1,2\n3\n", "data: f.csv:3: 1 fields, the header has 2"},
		{"long row", "a,y\n1,2\n3,4,5\n", "data: f.csv:3: 3 fields, the header has 2"},
		{"word", "a,y\n1,2\nthree,4\n", `data: f.csv:3: column a: "three" is not a number`},
		{"empty cell", "a,y\n1,\n", `data: f.csv:2: column y: "" is not a number`},
		{"out of range", "a,y\n1e999,2\n", `data: f.csv:2: column a: "1e999" is out of the range of a float64`},
		{"bare quote", "a,y\n1,2\"\n", "data: f.csv:2: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCSV("f.csv", strings.NewReader(tc.text), "y")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line starting %q", err, tc.want)
			}
		})
	}
	if _, err := ReadCSVFile(t.TempDir(), "y"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}

// npyFiles returns the bytes of .npy files of tensors.
func npyFiles(t testing.TB, ts map[string]*tensor.Tensor) map[string][]byte {
	out := map[string][]byte{}
	for name, x := range ts {
		var b bytes.Buffer
		if err := tensorio.WriteNPY(&b, x.Array()); err != nil {
			t.Fatal(err)
		}
		out[name] = b.Bytes()
	}
	return out
}

func zipOf(t testing.TB, files map[string][]byte) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := z.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(files[n])
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sampleXY() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"x.npy": tensor.FromFloats(ir.T(ir.F32, 3, 2), []float64{1, 2, 3, 4, 5, 6}),
		"y.npy": tensor.FromFloats(ir.T(ir.I64, 3), []float64{0, 1, 2}),
	}
}

// A .npy directory and an .npz archive hold the same datasets, any dtype; a test set is read
// when both of its arrays are there.
func TestReadNPY(t *testing.T) {
	dir := t.TempDir()
	ts := sampleXY()
	ts["test_x.npy"] = tensor.FromFloats(ir.T(ir.F64, 1, 2), []float64{7, 8})
	ts["test_y.npy"] = tensor.FromFloats(ir.T(ir.I64, 1), []float64{1})
	files := npyFiles(t, ts)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, te, err := ReadNPYDir(dir)
	if err != nil || tr.Len() != 3 || te == nil || te.Len() != 1 || te.X.Type.DType != ir.F64 {
		t.Fatalf("ReadNPYDir: %v %v %v", tr, te, err)
	}
	z := zipOf(t, files)
	ztr, zte, err := ReadNPZ("d.npz", bytes.NewReader(z), int64(len(z)))
	if err != nil || !slices.Equal(ztr.X.F, tr.X.F) || !slices.Equal(ztr.Y.I, tr.Y.I) || !slices.Equal(zte.X.F, te.X.F) {
		t.Fatalf("ReadNPZ: %v %v %v", ztr, zte, err)
	}
	os.Remove(filepath.Join(dir, "test_y.npy"))
	if _, _, err := ReadNPYDir(dir); err == nil || !strings.Contains(err.Error(), "has one of test_x.npy and test_y.npy") {
		t.Errorf("half a test set: %v", err)
	}
}

// Each malformed .npz archive is one error naming it and, where there is one, the member.
func TestReadNPZErrors(t *testing.T) {
	good := npyFiles(t, sampleXY())
	with := func(name string, b []byte) map[string][]byte {
		m := map[string][]byte{}
		for k, v := range good {
			m[k] = v
		}
		if b == nil {
			delete(m, name)
		} else {
			m[name] = b
		}
		return m
	}
	short := npyFiles(t, map[string]*tensor.Tensor{"y.npy": tensor.New(ir.T(ir.I64, 2))})["y.npy"]
	for _, tc := range []struct {
		name string
		zip  []byte
		want string
	}{
		{"not a zip", []byte("PK but not"), "data: d.npz: zip: not a valid zip file"},
		{"no y", zipOf(t, with("y.npy", nil)), "data: d.npz: want members x.npy and y.npy"},
		{"other member", zipOf(t, with("w.npy", good["x.npy"])), `data: d.npz: member "w.npy" is none of`},
		{"path member", zipOf(t, with("../x.npy", good["x.npy"])), `member "../x.npy" is none of`},
		{"trailing bytes", zipOf(t, with("x.npy", append(slices.Clone(good["x.npy"]), 0))), "data: d.npz: x.npy: 1 bytes after the array"},
		{"truncated member", zipOf(t, with("x.npy", good["x.npy"][:len(good["x.npy"])-4])), "data: d.npz: x.npy: tensorio: npy: truncated data"},
		{"lengths differ", zipOf(t, with("y.npy", short)), "data: d.npz: 3 rows of inputs (f32[3,2]) but 2 rows of targets (i64[2])"},
		{"half a test set", zipOf(t, with("test_x.npy", good["x.npy"])), "data: d.npz: want members test_x.npy and test_y.npy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadNPZ("d.npz", bytes.NewReader(tc.zip), int64(len(tc.zip)))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// FuzzReadCSV checks that ReadCSV never panics and that what it accepts is consistent: as many
// targets and line numbers as rows, each row as many inputs as the header has columns but one.
func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("a,y\n1,2\n3,4\n"), "y")
	f.Add([]byte("y,b,c\r\n\"1\",2e3,-0x1p-2\r\n"), "b")
	f.Add([]byte("a,y\n1,2\n3\n"), "y")
	f.Add([]byte("a,y\nNaN,Inf\n"), "a")
	f.Fuzz(func(t *testing.T, in []byte, target string) {
		d, err := ReadCSV("f.csv", bytes.NewReader(in), target)
		if err != nil {
			return
		}
		n := d.Len()
		if n == 0 || d.Y.Len() != n || len(d.Lines) != n || d.X.Len()%n != 0 || d.X.Type.Shape[1] == 0 {
			t.Fatalf("accepted %s and %s with %d lines", d.X.Type, d.Y.Type, len(d.Lines))
		}
	})
}

// FuzzReadNPZ checks that ReadNPZ never panics, and that a dataset it accepts has as many rows
// of targets as of inputs.
func FuzzReadNPZ(f *testing.F) {
	good := npyFiles(f, sampleXY())
	f.Add(zipOf(f, good))
	f.Add(zipOf(f, map[string][]byte{"x.npy": good["x.npy"]}))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, te, err := ReadNPZ("f.npz", bytes.NewReader(in), int64(len(in)))
		if err != nil {
			return
		}
		for _, d := range []*Tensors{tr, te} {
			if d != nil && d.X.Type.Shape[0] != d.Y.Type.Shape[0] {
				t.Fatalf("accepted %s and %s", d.X.Type, d.Y.Type)
			}
		}
	})
}

// short is a Dataset whose Rows returns one target too few.
type short struct{}

func (short) Len() int { return 8 }
func (short) Rows(rows []int) (x, y *tensor.Tensor, err error) {
	return tensor.New(ir.T(ir.F32, len(rows), 2)), tensor.New(ir.T(ir.I64, len(rows)-1)), nil
}

// A Dataset whose Rows returns inputs and targets of other lengths than the rows asked for ends
// the epoch with an error naming it; Head keeps the first rows and the row names; the targets
// alone come from Targets where a dataset has it.
func TestDatasetContract(t *testing.T) {
	for _, noWorker := range []bool{false, true} {
		l := &Loader{Data: short{}, Batch: 4, NoWorker: noWorker}
		for _, err := range l.Epoch(0) {
			if err == nil || !strings.Contains(err.Error(), "data: data.short: asked for 4 rows, returned inputs f32[4,2] and targets i64[3]") {
				t.Errorf("error %v", err)
			}
		}
	}
	d, err := ReadCSV("t.csv", strings.NewReader("a,y\n1,2\n3,4\n5,6\n"), "y")
	if err != nil {
		t.Fatal(err)
	}
	h := Head(d, 2)
	if h.Len() != 2 || Name(h) != "t.csv[:2]" || RowName(h, 1) != "t.csv:3" || Head(d, 0) != Dataset(d) || Head(d, 5) != Dataset(d) {
		t.Errorf("Head: %d rows, %q, %q", h.Len(), Name(h), RowName(h, 1))
	}
	if y, err := ReadTargets(h, []int{1, 0}); err != nil || !slices.Equal(y.F, []float64{4, 2}) {
		t.Errorf("ReadTargets: %v %v", y, err)
	}
	if y, err := ReadTargets(short{}, []int{1, 0}); err != nil || y.Type.String() != "i64[1]" {
		t.Errorf("ReadTargets without Targets: %v %v", y, err)
	}
}
