//go:build !(linux && (amd64 || arm64)) || nocuda

package dynlib

import (
	"runtime"
	"testing"
)

// TestUnavailable runs in builds that open no library (go test -tags nocuda).
func TestUnavailable(t *testing.T) {
	var cos func(float64) float64
	err := Open("libm.so.6", Spec{Required: []Func{{Name: "cos", Ptr: &cos}}})
	if err == nil || cos != nil {
		t.Fatalf("Open = %v in a build that opens no library", err)
	}
	want := "gcomp loads NVIDIA's libraries on linux/amd64 and linux/arm64, not on " + runtime.GOOS + "/" + runtime.GOARCH
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		want = "this gcomp was built with the tag nocuda"
	}
	if err.Error() != want {
		t.Errorf("Open: %q, want %q", err, want)
	}
}
