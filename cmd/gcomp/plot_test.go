package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A metrics log as gcomp train writes it: step records and epoch summaries.
const goodMetrics = `{"epoch":1,"step":100,"train_loss":1.2}
{"epoch":1,"step":200,"train_loss":0.8,"images_per_sec":2400}
{"epoch":1,"train_loss":0.95,"test_loss":0.7,"test_accuracy":0.78}

{"epoch":2,"step":300,"train_loss":0.6}
{"epoch":2,"step":400,"train_loss":0.5}
{"epoch":2,"train_loss":0.55,"test_loss":0.52,"test_accuracy":0.84,"train_accuracy":0.85}
`

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.jsonl", goodMetrics)
	write("epochs.jsonl", "{\"epoch\":1,\"test_loss\":0.7,\"test_accuracy\":0.78}\n{\"epoch\":2,\"test_loss\":0.5,\"test_accuracy\":0.84}\n")
	write("lossonly.jsonl", "{\"epoch\":1,\"step\":1,\"train_loss\":2.3}\n{\"epoch\":1,\"step\":2,\"train_loss\":null}\n")
	write("empty.jsonl", "")
	write("blank.jsonl", "\n  \n")
	write("badjson.jsonl", "{\"epoch\":1,\"step\":1,\"train_loss\":2.3}\n{\"epoch\":1,\"step\":2,\"train_loss\":2.1\n")
	write("array.jsonl", "[1,2]\n")
	write("null.jsonl", "null\n")
	write("noepoch.jsonl", "{\"step\":1,\"train_loss\":2.3}\n")
	write("fracepoch.jsonl", "{\"epoch\":1.5,\"train_loss\":2.3}\n")
	write("badstep.jsonl", "{\"epoch\":1,\"step\":0,\"train_loss\":2.3}\n")
	write("backwards.jsonl", "{\"epoch\":1,\"step\":5}\n{\"epoch\":1,\"step\":5}\n")
	write("strloss.jsonl", "{\"epoch\":1,\"train_loss\":\"0.5\"}\n")
	write("percent.jsonl", "{\"epoch\":1,\"test_accuracy\":85.2}\n")
	write("nothing.jsonl", "{\"epoch\":1,\"lr\":0.1}\n")
	write("long.jsonl", "{\"epoch\":1,\"pad\":\""+strings.Repeat("x", maxMetricsLine)+"\"}\n")
	for _, tc := range []struct {
		name   string
		args   []string
		want   string // substring of the error; "" for success
		height int    // of the image, in pixels, on success
	}{
		{"steps and epochs", []string{"good.jsonl", "-o", "out.png"}, "", 2 * 4 * 96},
		{"epochs only", []string{"epochs.jsonl", "-o", "out.png", "--title", "run 1"}, "", 2 * 4 * 96},
		{"loss only", []string{"lossonly.jsonl", "-o", "out.png"}, "", 4 * 96},
		{"empty file", []string{"empty.jsonl", "-o", "out.png"}, "empty.jsonl: no records", 0},
		{"blank lines", []string{"blank.jsonl", "-o", "out.png"}, "blank.jsonl: no records", 0},
		{"bad JSON", []string{"badjson.jsonl", "-o", "out.png"}, "badjson.jsonl:2: invalid JSON: unexpected end of JSON input", 0},
		{"array", []string{"array.jsonl", "-o", "out.png"}, "array.jsonl:1: want a JSON object, have a JSON array", 0},
		{"null", []string{"null.jsonl", "-o", "out.png"}, "null.jsonl:1: want a JSON object, have null", 0},
		{"no epoch", []string{"noepoch.jsonl", "-o", "out.png"}, `noepoch.jsonl:1: no "epoch"; every record needs one`, 0},
		{"fractional epoch", []string{"fracepoch.jsonl", "-o", "out.png"}, "fracepoch.jsonl:1: epoch is 1.5, want an integer from 0 to 1099511627776", 0},
		{"step zero", []string{"badstep.jsonl", "-o", "out.png"}, "badstep.jsonl:1: step is 0, want an integer from 1 to 1099511627776", 0},
		{"steps backwards", []string{"backwards.jsonl", "-o", "out.png"}, "backwards.jsonl:2: step 5 comes after step 5 (line 1); steps must increase", 0},
		{"string loss", []string{"strloss.jsonl", "-o", "out.png"}, `strloss.jsonl:1: train_loss is "0.5", want a number`, 0},
		{"percent accuracy", []string{"percent.jsonl", "-o", "out.png"}, "percent.jsonl:1: test_accuracy is 85.2, want a fraction in [0,1]", 0},
		{"nothing to plot", []string{"nothing.jsonl", "-o", "out.png"}, "nothing.jsonl: no losses or accuracies to plot", 0},
		{"line too long", []string{"long.jsonl", "-o", "out.png"}, "long.jsonl:1: line longer than 1048576 bytes", 0},
		{"missing file", []string{"none.jsonl", "-o", "out.png"}, "none.jsonl: no such file", 0},
		{"no log", []string{"-o", "out.png"}, "gcomp plot: no metrics log given", 0},
		{"two logs", []string{"good.jsonl", "epochs.jsonl", "-o", "out.png"}, "want one metrics log, have 2 arguments", 0},
		{"no -o", []string{"good.jsonl"}, "-o FILE.png is required", 0},
		{"not png", []string{"good.jsonl", "-o", "out.svg"}, "-o out.svg: the output is a PNG image", 0},
		{"no directory", []string{"good.jsonl", "-o", "nodir/out.png"}, "directory nodir does not exist", 0},
		{"unknown flag", []string{"good.jsonl", "-o", "out.png", "--frob"}, "flag provided but not defined: -frob", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(dir)
			os.Remove("out.png")
			var stdout, stderr bytes.Buffer
			err := cmdPlot(tc.args, &stdout, &stderr)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line with %q", err, tc.want)
				}
				if _, err := os.Stat("out.png"); err == nil {
					t.Error("out.png written by a failing command")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile("out.png")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
				t.Fatalf("out.png starts %q, not with the PNG signature", b[:min(8, len(b))])
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Width != 8*96 || cfg.Height != tc.height {
				t.Errorf("image is %dx%d, want %dx%d", cfg.Width, cfg.Height, 8*96, tc.height)
			}
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("out.png does not decode: %v", err)
			}
			entries, _ := os.ReadDir(".")
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".out.png") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

// The same log gives the same image, byte for byte.
func TestPlotDeterministic(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("m.jsonl", []byte(goodMetrics), 0o644)
	var images [][]byte
	for _, out := range []string{"a.png", "b.png"} {
		if err := cmdPlot([]string{"m.jsonl", "-o", out}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		images = append(images, b)
	}
	if !bytes.Equal(images[0], images[1]) {
		t.Error("two runs on the same log wrote different images")
	}
}

// FuzzReadMetrics: any bytes either parse into records whose fields keep their documented
// ranges, or give one error naming the file; never a panic. A log that parses draws.
func FuzzReadMetrics(f *testing.F) {
	for _, s := range []string{
		`{"epoch":1,"step":100,"train_loss":0.5}` + "\n" + `{"epoch":1,"test_loss":0.4,"test_accuracy":0.85}`,
		`{"epoch":0}`, `[]`, `null`, `{"epoch":1.5}`, `{"epoch":1,"step":2}` + "\n" + `{"epoch":1,"step":1}`,
		`{"epoch":1,"test_accuracy":2}`, "\n\n", `{"epoch":1,"train_loss":1e308,"step":9007199254740992}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := readMetrics("m.jsonl", bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "gcomp plot: m.jsonl") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q does not name the file on one line", err)
			}
			return
		}
		for _, m := range log.records {
			for _, a := range []float64{m.trainAccuracy, m.testAccuracy} {
				if a < 0 || a > 1 {
					t.Fatalf("accuracy %v outside [0,1] in %+v", a, m)
				}
			}
			if m.epoch < 0 || m.step < 0 {
				t.Fatalf("negative epoch or step in %+v", m)
			}
		}
		if _, err := drawCurves(log, "fuzz"); err != nil {
			t.Logf("draw: %v", err) // a log with nothing to draw may say so
		}
	})
}
