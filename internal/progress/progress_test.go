package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPlainLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int
		steps []int // items per Add
		want  string
	}{
		{"quarters", 1000, []int{250, 250, 250, 250},
			"epoch 1/3: 250/1000 images (25%), 250.0 images/s, loss 1.0000, eta 3s\n" +
				"epoch 1/3: 500/1000 images (50%), 250.0 images/s, loss 0.7500, eta 2s\n" +
				"epoch 1/3: 750/1000 images (75%), 250.0 images/s, loss 0.6111, eta 1s\n" +
				"epoch 1/3: 1000/1000 images (100%), 200.0 images/s, loss 0.5208, in 5s\n"},
		{"one line per tenth", 30, []int{1, 1, 1, 1, 1, 1, 24},
			"epoch 1/3: 3/30 images (10%), 1.0 images/s, loss 0.6111, eta 27s\n" +
				"epoch 1/3: 6/30 images (20%), 1.0 images/s, loss 0.4083, eta 24s\n" +
				"epoch 1/3: 30/30 images (100%), 3.8 images/s, loss 0.1960, in 8s\n"},
		{"one step", 100, []int{100}, "epoch 1/3: 100/100 images (100%), 50.0 images/s, loss 1.0000, in 2s\n"},
		{"empty", 0, nil, "epoch 1/3: 0/0 images (100%), 0.0 images/s, loss 0.0000, in 1s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b := newBar(&buf, "epoch 1/3", "images", tc.total, false, func() time.Time { return now })
			for i, n := range tc.steps {
				now = now.Add(time.Second) // each step takes a second
				b.Add(n, 1/float64(i+1))   // losses 1, 1/2, 1/3, …: the line shows their mean weighted by items
			}
			now = now.Add(time.Second)
			b.Finish()
			if diff := cmp.Diff(tc.want, buf.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
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
