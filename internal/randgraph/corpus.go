package randgraph

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// CheckCorpusKinds checks that every seed input named kind-NAME in a fuzz target's corpus
// directory still makes a graph of kind NAME through FromBytes and Graph: a change to the
// generator must not quietly turn the corpus's entry for a kind into another kind.
func CheckCorpusKinds(t testing.TB, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "kind-*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kind-* inputs in %s: %v", dir, err)
	}
	have := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(src)), "\n")
		data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "[]byte("), ")"))
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || err != nil {
			t.Fatalf("%s: not one []byte fuzz input: %v", f, err)
		}
		r, _ := FromBytes([]byte(data))
		want := strings.TrimPrefix(filepath.Base(f), "kind-")
		if g := Graph(r); g.Name != want {
			t.Errorf("%s makes a graph of kind %s, not %s", f, g.Name, want)
		}
		have[want] = true
	}
	for _, k := range Kinds() {
		if !have[k] {
			t.Errorf("%s has no input for the kind %s", dir, k)
		}
	}
}
