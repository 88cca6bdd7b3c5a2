package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPlainLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int
		step  time.Duration // each Add's
		steps []int         // items per Add
		want  string
	}{
		// An epoch shorter than Interval is one line, however many steps it has.
		{"short epoch", 1000, 50 * time.Millisecond, repeat(10, 100),
			"epoch 1/3: 1000/1000 images (100%), 66.7 images/s, loss 0.0519, in 15s\n"},
		// A long one has a line at most every Interval, then the final one.
		{"long epoch", 1000, 4 * time.Second, repeat(100, 10),
			"epoch 1/3: 300/1000 images (30%), 25.0 images/s, loss 0.6111, eta 28s\n" +
				"epoch 1/3: 600/1000 images (60%), 25.0 images/s, loss 0.4083, eta 16s\n" +
				"epoch 1/3: 900/1000 images (90%), 25.0 images/s, loss 0.3143, eta 4s\n" +
				"epoch 1/3: 1000/1000 images (100%), 20.0 images/s, loss 0.2929, in 50s\n"},
		{"one step", 100, time.Second, []int{100}, "epoch 1/3: 100/100 images (100%), 9.1 images/s, loss 1.0000, in 11s\n"},
		{"empty", 0, time.Second, nil, "epoch 1/3: 0/0 images (100%), 0.0 images/s, loss 0.0000, in 10s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b := newBar(&buf, "epoch 1/3", "images", tc.total, false, func() time.Time { return now })
			for i, n := range tc.steps {
				now = now.Add(tc.step)
				b.Add(n, 1/float64(i+1)) // losses 1, 1/2, 1/3, …: the line shows their mean weighted by items
			}
			now = now.Add(Interval) // the evaluation after the epoch
			b.Finish()
			if diff := cmp.Diff(tc.want, buf.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func repeat(n, count int) []int {
	xs := make([]int, count)
	for i := range xs {
		xs[i] = n
	}
	return xs
}

// A file is not a terminal: a thousand quick updates write one line, the final one.
func TestFileGetsOneLine(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := New(f, "epoch 1/1", "rows", 1000)
	for range 1000 {
		b.Add(1, 0.5)
	}
	b.Finish()
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "\n"); n != 1 || !strings.HasPrefix(string(out), "epoch 1/1: 1000/1000 rows (100%)") {
		t.Errorf("%d lines:\n%s", n, out)
	}
}

// On a terminal the bar is drawn in place with the description, the running loss and the count.
func TestTerminalBar(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, "epoch 2/3", "images", 100, true, time.Now)
	b.Add(50, 0.25)
	b.Add(50, 0.75)
	b.Finish()
	out := buf.String()
	for _, want := range []string{"\r", "epoch 2/3 loss 0.5000", "100/100", "images/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("output %q does not end its line", out)
	}
	if IsTerminal(&buf) {
		t.Error("a buffer is a terminal")
	}
}
