//go:build unix

package onnx

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// constantExternalModel is y = x + c where the Constant node's value c (f32[2]) is external data.
func constantExternalModel(loc string) []byte {
	c := &onnxpb.TensorProto{Name: ptr("c"), Dims: []int64{2}, DataType: ptr(int32(onnxFloat)),
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{{Key: ptr("location"), Value: ptr(loc)}}}
	return model(13, &onnxpb.GraphProto{
		Name:  ptr("c"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2)},
		Node: []*onnxpb.NodeProto{
			nodeP("Constant", "k", nil, []string{"c"}, &onnxpb.AttributeProto{Name: ptr("value"), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: c}),
			nodeP("Add", "a", []string{"x", "c"}, []string{"y"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 2)},
	})
}

// External data must be a regular file whose resolved path lies in the model's folder: a symbolic
// link out of it (to a file or through a directory), a named pipe and a directory are refused, for
// initializers and Constant nodes alike; a link that stays inside is followed.
func TestExternalDataConfined(t *testing.T) {
	defer func(w time.Duration) { tensorio.FIFOWait = w }(tensorio.FIFOWait)
	tensorio.FIFOWait = 100 * time.Millisecond
	top := t.TempDir()
	dir, outside := filepath.Join(top, "model"), filepath.Join(top, "secret")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w := tensor.FromFloats(ir.T(ir.F32, 2), []float64{1.5, -2}).Bytes()
	for _, f := range []string{filepath.Join(outside, "w.bin"), filepath.Join(dir, "sub", "w.bin")} {
		if err := os.WriteFile(f, w, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"file.bin": filepath.Join(outside, "w.bin"), // a file outside
		"dirlink":  outside,                         // a directory outside
		"rel.bin":  "../secret/w.bin",               // a relative link outside
		"in.bin":   "sub/w.bin",                     // a link that stays inside
		"zero.bin": "/dev/zero",                     // a device
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.bin"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ loc, want string }{
		{"file.bin", "outside the folder"},
		{"dirlink/w.bin", "outside the folder"},
		{"rel.bin", "outside the folder"},
		{"zero.bin", "outside the folder"},
		{"pipe.bin", `external data "pipe.bin"`},
		{"sub", `external data "sub"`},
		{"in.bin", ""},
		{"sub/w.bin", ""},
	} {
		for kind, data := range map[string][]byte{"initializer": externalModel(tc.loc, "", ""), "Constant": constantExternalModel(tc.loc)} {
			done := make(chan error, 1)
			go func() {
				_, err := Import("e.onnx", data, dir, Options{})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s %s: import blocked", kind, tc.loc)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s %s: %v", kind, tc.loc, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s %s: got %v, want an error with %q", kind, tc.loc, err, tc.want)
			}
		}
	}
}

// A model file or a .pb tensor file that is a named pipe without a writer is an error, not an
// open that never returns; one that is /dev/zero is read up to the stream budget and refused.
func TestModelAndTensorFilesBounded(t *testing.T) {
	defer func(w time.Duration, m int64) { tensorio.FIFOWait, maxStreamBytes = w, m }(tensorio.FIFOWait, maxStreamBytes)
	tensorio.FIFOWait, maxStreamBytes = 100*time.Millisecond, 1<<16
	dir := t.TempDir()
	for _, name := range []string{"m.onnx", "x.pb"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero-"+name)); err != nil {
			t.Fatal(err)
		}
	}
	x, err := proto.Marshal(encodeTensor("x", tensor.FromFloats(ir.T(ir.F32, 2), []float64{1, 2})))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "good.pb"), x, 0o644); err != nil {
		t.Fatal(err)
	}
	readPB := func(p string) error { _, err := ReadTensorFile(p); return err }
	readONNX := func(p string) error { _, err := ImportFile(p, Options{}); return err }
	for _, tc := range []struct {
		file string
		read func(string) error
		want string
	}{
		{"m.onnx", readONNX, "named pipe that no writer opened"},
		{"x.pb", readPB, "named pipe that no writer opened"},
		{"zero-m.onnx", readONNX, "longer than the limit for a file that is not a regular file (65536 bytes)"},
		{"zero-x.pb", readPB, "longer than the limit for a file that is not a regular file (65536 bytes)"},
		{"good.pb", readPB, ""},
	} {
		done := make(chan error, 1)
		go func() { done <- tc.read(filepath.Join(dir, tc.file)) }()
		select {
		case err := <-done:
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("%s: got %v, want %q", tc.file, err, tc.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: reading blocked", tc.file)
		}
	}
}
