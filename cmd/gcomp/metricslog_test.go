package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Resuming from a checkpoint of epoch 1 at step 4 drops what an interrupted epoch 2 logged.
func TestTruncateLog(t *testing.T) {
	epoch1 := `{"epoch":1,"step":2,"train_loss":0.9}
{"epoch":1,"step":4,"train_loss":0.8}

{"epoch":1,"train_loss":0.85,"test_accuracy":0.5}
`
	tests := []struct {
		name, log, want string
	}{
		{"nothing stale", epoch1, epoch1},
		{"stale steps", epoch1 + `{"epoch":2,"step":6,"train_loss":0.7}` + "\n", epoch1},
		{"the next step", epoch1 + `{"epoch":2,"step":5,"train_loss":0.7}` + "\n", epoch1},
		{"stale summary", epoch1 + `{"epoch":2,"train_loss":0.7}` + "\n", epoch1},
		{"cut-short line", epoch1 + `{"epoch":2,"st`, epoch1},
		{"garbage line", epoch1 + "\x00\x00\n" + `{"epoch":1,"step":3}` + "\n", epoch1},
		{"over-long line", epoch1 + strings.Repeat(" ", maxMetricsLine+1) + "\n", epoch1},
		{"empty", "", ""},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		path := filepath.Join(dir, "m.jsonl")
		if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := truncateLog(path, 1, 4); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, _ := os.ReadFile(path); string(got) != tc.want {
			t.Errorf("%s: log = %q, want %q", tc.name, got, tc.want)
		}
	}
	if err := truncateLog(filepath.Join(dir, "none.jsonl"), 1, 4); err != nil {
		t.Errorf("a missing log: %v", err)
	}
}

// After an interrupted epoch, --resume continues the metrics log without repeating a step, and
// gcomp plot reads it.
func TestTrainResumeAfterInterrupt(t *testing.T) {
	data := trainFixture(t)
	common := []string{"tiny.go", "--data", data, "--device", "ref", "--optimizer", "sgd", "--lr", "0.05"}
	runTrain(t, append(common, "--epochs", "2", "--save", "two.safetensors", "--log", "two.jsonl")...)
	runTrain(t, append(common, "--epochs", "1", "--save", "one.safetensors", "--log", "resumed.jsonl")...)
	// What an epoch 2 interrupted after its step records (and in the middle of a line) leaves.
	two, err := os.ReadFile("two.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(two), "\n")
	f, err := os.OpenFile("resumed.jsonl", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(lines[2] + lines[2][:10])
	f.Close()
	runTrain(t, append(common, "--epochs", "1", "--resume", "one.safetensors", "--save", "resumed.safetensors", "--log", "resumed.jsonl")...)
	got, want := readLog(t, "resumed.jsonl"), readLog(t, "two.jsonl")
	if len(got) != len(want) {
		t.Fatalf("resumed log has %d records, want %d:\n%+v", len(got), len(want), got)
	}
	gcompOK(t, "plot", "resumed.jsonl", "-o", "curves.png")
}

// FuzzTruncateLog checks the resume-time cut of a metrics log on any bytes: it keeps a prefix
// of whole lines, every kept record belongs to the checkpoint (step and epoch not past it), the
// kept prefix is kept whole when cut again, and nothing panics.
func FuzzTruncateLog(f *testing.F) {
	f.Add([]byte("{\"epoch\":1,\"step\":2,\"train_loss\":0.9}\n{\"epoch\":1,\"train_loss\":0.85}\n{\"epoch\":2,\"step\":6}\n"), 1, 4)
	f.Add([]byte("{\"epoch\":1,\"st"), 1, 4)
	f.Add([]byte("\n\n{\"epoch\":0}\n\x00\n"), 0, 0)
	f.Fuzz(func(t *testing.T, log []byte, epoch, steps int) {
		keep, err := logPrefix(bufio.NewReaderSize(bytes.NewReader(log), maxMetricsLine), epoch, steps)
		if err != nil {
			t.Fatalf("reading from memory: %v", err)
		}
		if keep < 0 || keep > int64(len(log)) || keep > 0 && log[keep-1] != '\n' {
			t.Fatalf("kept %d bytes of %d, not whole lines", keep, len(log))
		}
		kept := log[:keep]
		for _, line := range bytes.Split(kept, []byte("\n")) {
			if text := bytes.TrimSpace(line); len(text) > 0 {
				m, err := parseMetric(text)
				if err != nil || m.step > steps || m.step == 0 && m.epoch > epoch {
					t.Fatalf("kept %q (%v) for epoch %d, step %d", line, err, epoch, steps)
				}
			}
		}
		again, err := logPrefix(bufio.NewReaderSize(bytes.NewReader(kept), maxMetricsLine), epoch, steps)
		if err != nil || again != keep {
			t.Fatalf("cutting the kept prefix again kept %d of %d bytes (%v)", again, keep, err)
		}
	})
}
