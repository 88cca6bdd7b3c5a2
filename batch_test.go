package gcomp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Options.Batch traces a model file that declares its batch at another batch; a model whose
// batch is fixed is an error naming it.
func TestCompileFileBatch(t *testing.T) {
	dir := t.TempDir()
	const model = `package m

import "github.com/gcomp/gcomp/frontend"

func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, BATCH, 4)
	b.Output("y", x.Relu())
}
`
	for _, tc := range []struct {
		name, batchExpr string
		batch           int
		wantShape       []int
		wantErr         string
	}{
		{"own batch", "b.Batch(8)", 0, []int{8, 4}, ""},
		{"chosen batch", "b.Batch(8)", 3, []int{3, 4}, ""},
		{"fixed batch", "8", 3, nil, "never declares its batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".go")
			if err := os.WriteFile(path, []byte(strings.Replace(model, "BATCH", tc.batchExpr, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := CompileFile(path, Options{Batch: tc.batch})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Inputs()[0].Shape; !slices.Equal(got, tc.wantShape) {
				t.Errorf("input shape %v, want %v", got, tc.wantShape)
			}
		})
	}
}
