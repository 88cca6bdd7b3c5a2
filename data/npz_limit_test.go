package data

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// npzMember is one member of a hand-made archive: its bytes, stored deflated; declared, when
// not 0, is the uncompressed size the archive claims, true or not.
type npzMember struct {
	name     string
	data     []byte
	declared uint64
	corrupt  bool // the compressed bytes are garbage
}

// bombNPZ writes members with archive/zip's CreateRaw, so that the sizes in the archive are what
// the test says (a zip bomb lies about them).
func bombNPZ(t *testing.T, members ...npzMember) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		var comp bytes.Buffer
		fw, _ := flate.NewWriter(&comp, flate.BestCompression)
		fw.Write(m.data)
		fw.Close()
		if m.corrupt {
			comp.Reset()
			comp.Write([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		}
		size := uint64(len(m.data))
		if m.declared != 0 {
			size = m.declared
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: m.name, Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(m.data),
			CompressedSize64: uint64(comp.Len()), UncompressedSize64: size})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(comp.Bytes())
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An .npz archive whose x.npy inflates far past the data memory budget is refused before it is
// held: by the size the archive declares, by the array header's shape when the archive lies
// about the size, and by the budget left after the other members; an array within the budget
// reads. Corrupt deflate data is reported as such, not as a truncated header.
func TestReadNPZBudget(t *testing.T) {
	const elems = 4 << 20 // f32: 16 MiB inflated from about 16 KB, 32 MiB more as a tensor
	files := npyFiles(t, map[string]*tensor.Tensor{
		"x.npy": tensor.New(ir.T(ir.F32, elems, 1)),
		"y.npy": tensor.New(ir.T(ir.I64, elems)),
	})
	x, y := files["x.npy"], files["y.npy"]
	defer SetMemoryBudget(0)
	for _, tc := range []struct {
		name    string
		budget  int64
		members []npzMember
		want    string // "" for success
	}{
		{"declared size", 8 << 20, []npzMember{{name: "x.npy", data: x}, {name: "y.npy", data: y}},
			"data: bomb.npz: x.npy: declares 16777344 bytes uncompressed, more than what is left of the data memory budget (8388608 bytes)"},
		{"header shape, size a lie", 8 << 20, []npzMember{{name: "x.npy", data: x, declared: 1000}, {name: "y.npy", data: y}},
			"data: bomb.npz: x.npy: tensorio: npy: f32[4194304 1] is 16777216 bytes, and 33554432 more as a tensor: more than what is left of the data memory budget (8388608 bytes)"},
		{"budget left", 90 << 20, []npzMember{{name: "x.npy", data: x}, {name: "y.npy", data: y}},
			"data: bomb.npz: y.npy: tensorio: npy: i64[4194304] is 33554432 bytes, and 33554432 more as a tensor: more than what is left of the data memory budget (60817408 bytes)"},
		{"within the budget", 128 << 20, []npzMember{{name: "x.npy", data: x}, {name: "y.npy", data: y}}, ""},
		{"corrupt deflate", 0, []npzMember{{name: "x.npy", data: x, corrupt: true}, {name: "y.npy", data: y}},
			"data: bomb.npz: x.npy: tensorio: npy: reading the header: flate: corrupt input before offset"},
	} {
		SetMemoryBudget(tc.budget)
		z := bombNPZ(t, tc.members...)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr, _, err := ReadNPZ("bomb.npz", bytes.NewReader(z), int64(len(z)))
		runtime.ReadMemStats(&after)
		if tc.want == "" {
			if err != nil || tr.Len() != elems {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line containing %q", tc.name, err, tc.want)
		}
		// Refused before the array is held: only the members read before it and buffers.
		if alloc := after.TotalAlloc - before.TotalAlloc; tc.name != "budget left" && alloc > 8<<20 {
			t.Errorf("%s: refusing allocated %d bytes", tc.name, alloc)
		}
	}
}

// An .npz path that is a named pipe is refused at once (the archive is read from its end), not
// waited on; a directory is one error.
func TestReadNPZFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "d.npz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	shortFIFOWait(t)
	go func() { // a writer, so the open succeeds and the check after it is what refuses
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			time.Sleep(time.Second)
			w.Close()
		}
	}()
	for path, want := range map[string]string{fifo: "d.npz: not a regular file", dir: "is a directory"} {
		if _, _, err := ReadNPZFile(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", path, err, want)
		}
	}
}

// The other readers of user data open through tensorio.OpenRead too (a named pipe without a
// writer is refused, not waited on forever), and a .npy pair must fit the data memory budget.
func TestReadNPYAndIDXNotWhatTheySeem(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "x.npy"), 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	shortFIFOWait(t)
	big := filepath.Join(t.TempDir(), "big")
	os.Mkdir(big, 0o755)
	for name, b := range npyFiles(t, map[string]*tensor.Tensor{"x.npy": tensor.New(ir.T(ir.F32, 1000, 4)), "y.npy": tensor.New(ir.T(ir.I64, 1000))}) {
		os.WriteFile(filepath.Join(big, name), b, 0o644)
	}
	defer SetMemoryBudget(0)
	for _, tc := range []struct {
		name   string
		budget int64
		read   func() error
		want   string
	}{
		{"npy fifo", 0, func() error { _, _, err := ReadNPYDir(dir); return err }, "x.npy: a named pipe that no writer opened within 200ms"},
		{"idx fifo", 0, func() error { _, err := ReadIDXFile(filepath.Join(dir, "x.npy")); return err }, "x.npy: a named pipe that no writer opened within 200ms"},
		{"npy over the budget", 40_000, func() error { _, _, err := ReadNPYDir(big); return err },
			"x.npy: tensorio: npy: f32[1000 4] is 16000 bytes, and 32000 more as a tensor: more than what is left of the data memory budget (40000 bytes)"},
		{"npy within the budget", 64_000, func() error { _, _, err := ReadNPYDir(big); return err }, ""},
	} {
		SetMemoryBudget(tc.budget)
		checkRead(t, tc.name, tc.want, tc.read)
	}
}
