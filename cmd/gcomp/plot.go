package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gcomp/gcomp/tensorio"
)

// cmdPlot draws the loss and accuracy curves of a training run from its metrics log (the JSON
// lines of gcomp train --log; docs/data.md defines them) into a PNG file.
func cmdPlot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	out := fs.String("o", "", "the PNG file to write (required)")
	title := fs.String("title", "", "the figure's title (default: the log's file name)")
	pos, err := parseFlags(fs, args, stdout, "METRICS.jsonl -o CURVES.png [--title TEXT]")
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return fmt.Errorf("gcomp plot: no metrics log given")
	case len(pos) > 1:
		return fmt.Errorf("gcomp plot: want one metrics log, have %d arguments: %s", len(pos), strings.Join(pos, " "))
	case *out == "":
		return fmt.Errorf("gcomp plot: -o FILE.png is required")
	case !strings.EqualFold(filepath.Ext(*out), ".png"):
		return fmt.Errorf("gcomp plot: -o %s: the output is a PNG image and its name must end in .png", *out)
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	path := pos[0]
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("gcomp plot: %v", err)
	}
	defer f.Close()
	log, err := readMetrics(path, f)
	if err != nil {
		return err
	}
	if *title == "" {
		*title = filepath.Base(path)
	}
	img, err := drawCurves(log, *title)
	if err != nil {
		return fmt.Errorf("gcomp plot: %s: %v", path, err)
	}
	return tensorio.WriteFileAtomic(*out, func(w io.Writer) error {
		_, err := img.WriteTo(w)
		return err
	})
}

// metric is one record of a metrics log. A record with a step is a step record; one without is
// an epoch summary. Absent (or null) values are NaN.
type metric struct {
	line          int
	epoch, step   int
	trainLoss     float64
	testLoss      float64
	trainAccuracy float64
	testAccuracy  float64
}

// metricsLog is a parsed metrics log, in file order.
type metricsLog struct {
	records []metric
	steps   bool // some record has a step
}

// maxMetricValue bounds the magnitude of a value in a metrics log (a loss of 1e308 overflows the
// plotting library's axis arithmetic; a real one is far smaller).
const maxMetricValue = 1e300

// maxMetricCount bounds epochs and steps: near 2^53 consecutive steps are no longer distinct
// floats and the axis ticks never advance.
const maxMetricCount = 1 << 40

// maxMetricsLine bounds one line of a metrics log.
const maxMetricsLine = 1 << 20

// readMetrics parses a metrics log; errors name path:line.
func readMetrics(path string, r io.Reader) (*metricsLog, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxMetricsLine)
	log := &metricsLog{}
	lastStep, lastStepLine := 0, 0
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		m, err := parseMetric(text)
		if err != nil {
			return nil, fmt.Errorf("gcomp plot: %s:%d: %v", path, n, err)
		}
		m.line = n
		if m.step != 0 {
			if m.step <= lastStep {
				return nil, fmt.Errorf("gcomp plot: %s:%d: step %d comes after step %d (line %d); steps must increase", path, n, m.step, lastStep, lastStepLine)
			}
			lastStep, lastStepLine = m.step, n
			log.steps = true
		}
		log.records = append(log.records, m)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("gcomp plot: %s:%d: line longer than %d bytes", path, len(log.records)+1, maxMetricsLine)
		}
		return nil, fmt.Errorf("gcomp plot: %s: %v", path, err)
	}
	if len(log.records) == 0 {
		return nil, fmt.Errorf("gcomp plot: %s: no records (want one JSON object per line, e.g. {\"epoch\":1,\"step\":100,\"train_loss\":0.5})", path)
	}
	return log, nil
}

func parseMetric(text []byte) (metric, error) {
	m := metric{trainLoss: math.NaN(), testLoss: math.NaN(), trainAccuracy: math.NaN(), testAccuracy: math.NaN()}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(text, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return m, fmt.Errorf("want a JSON object, have a JSON %s", te.Value)
		}
		return m, fmt.Errorf("invalid JSON: %v", err)
	}
	if fields == nil {
		return m, fmt.Errorf("want a JSON object, have null")
	}
	number := func(key string) (float64, bool, error) {
		raw, ok := fields[key]
		if !ok || string(raw) == "null" {
			return math.NaN(), false, nil
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return 0, false, fmt.Errorf("%s is %s, want a number", key, raw)
		}
		// The plot's axes pad their range, which must stay finite.
		if math.Abs(v) > maxMetricValue {
			return 0, false, fmt.Errorf("%s is %s, too large to plot (at most %g in magnitude)", key, raw, maxMetricValue)
		}
		return v, true, nil
	}
	integer := func(key string, lo int) (int, bool, error) {
		v, ok, err := number(key)
		if err != nil || !ok {
			return 0, ok, err
		}
		if v != math.Trunc(v) || v < float64(lo) || v > maxMetricCount {
			return 0, false, fmt.Errorf("%s is %s, want an integer from %d to %d", key, fields[key], lo, int64(maxMetricCount))
		}
		return int(v), true, nil
	}
	var ok bool
	var err error
	if m.epoch, ok, err = integer("epoch", 0); err != nil {
		return m, err
	} else if !ok {
		return m, fmt.Errorf("no \"epoch\"; every record needs one")
	}
	if m.step, _, err = integer("step", 1); err != nil {
		return m, err
	}
	for _, f := range []struct {
		key      string
		v        *float64
		fraction bool
	}{
		{"train_loss", &m.trainLoss, false},
		{"test_loss", &m.testLoss, false},
		{"train_accuracy", &m.trainAccuracy, true},
		{"test_accuracy", &m.testAccuracy, true},
	} {
		if *f.v, _, err = number(f.key); err != nil {
			return m, err
		}
		if f.fraction && (*f.v < 0 || *f.v > 1) {
			return m, fmt.Errorf("%s is %s, want a fraction in [0,1]", f.key, fields[f.key])
		}
	}
	return m, nil
}

// curve is one line of the figure.
type curve struct {
	name   string
	xy     plotter.XYs
	color  color.Color
	points bool // also mark each point (epoch values)
}

func (c *curve) add(x, y float64) {
	if !math.IsNaN(y) {
		c.xy = append(c.xy, plotter.XY{X: x, Y: y})
	}
}

// drawCurves draws the loss panel and, when the log has accuracies, the accuracy panel below
// it. The x axis counts steps when the log has step records (an epoch summary sits at the last
// step logged before it), epochs otherwise.
func drawCurves(log *metricsLog, title string) (vgimg.PngCanvas, error) {
	blue := color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	orange := color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	stepLoss := &curve{name: "train loss (step)", color: color.RGBA{R: 0x9e, G: 0xc4, B: 0xe0, A: 0xff}}
	epochLoss := &curve{name: "train loss (epoch)", color: blue, points: true}
	testLoss := &curve{name: "test loss", color: orange, points: true}
	trainAcc := &curve{name: "train accuracy", color: blue, points: true}
	testAcc := &curve{name: "test accuracy", color: orange, points: true}
	lastStep := 0
	for _, m := range log.records {
		if m.step != 0 {
			lastStep = m.step
			stepLoss.add(float64(m.step), m.trainLoss)
			continue
		}
		x := float64(m.epoch)
		if log.steps {
			x = float64(lastStep)
		}
		epochLoss.add(x, m.trainLoss)
		testLoss.add(x, m.testLoss)
		trainAcc.add(x, m.trainAccuracy)
		testAcc.add(x, m.testAccuracy)
	}
	xLabel := "epoch"
	if log.steps {
		xLabel = "step"
	}
	var panels []*plot.Plot
	for _, p := range []struct {
		y      string
		curves []*curve
	}{
		{"loss", []*curve{stepLoss, epochLoss, testLoss}},
		{"accuracy", []*curve{trainAcc, testAcc}},
	} {
		pl := plot.New()
		pl.X.Label.Text, pl.Y.Label.Text = xLabel, p.y
		pl.Add(plotter.NewGrid())
		pl.Legend.Top = p.y == "loss"
		n := 0
		for _, c := range p.curves {
			if len(c.xy) == 0 {
				continue
			}
			n++
			line, err := plotter.NewLine(c.xy)
			if err != nil {
				return vgimg.PngCanvas{}, err
			}
			line.Color = c.color
			line.Width = vg.Points(1.5)
			pl.Add(line)
			pl.Legend.Add(c.name, line)
			if c.points {
				sc, err := plotter.NewScatter(c.xy)
				if err != nil {
					return vgimg.PngCanvas{}, err
				}
				sc.Color, sc.Shape = c.color, draw.CircleGlyph{}
				pl.Add(sc)
			}
		}
		if n > 0 {
			panels = append(panels, pl)
		}
	}
	if len(panels) == 0 {
		return vgimg.PngCanvas{}, fmt.Errorf("no losses or accuracies to plot (fields train_loss, test_loss, train_accuracy, test_accuracy)")
	}
	panels[0].Title.Text = title
	lo, hi := panels[0].X.Min, panels[0].X.Max
	for _, p := range panels {
		lo, hi = math.Min(lo, p.X.Min), math.Max(hi, p.X.Max)
	}
	for _, p := range panels {
		p.X.Min, p.X.Max = lo, hi // one x axis for both panels
	}
	if acc := panels[len(panels)-1]; acc.Y.Label.Text == "accuracy" {
		acc.Y.Min, acc.Y.Max = math.Min(acc.Y.Min, 1), 1 // accuracies end at 1; the bottom follows the data
	}
	for _, p := range panels {
		widen(&p.X.Min, &p.X.Max)
		widen(&p.Y.Min, &p.Y.Max)
	}
	img := vgimg.New(8*vg.Inch, vg.Length(4*len(panels))*vg.Inch)
	dc := draw.New(img)
	rows := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4),
		PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(12)}
	canvases := plot.Align(rows, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
	return vgimg.PngCanvas{Canvas: img}, nil
}

// widen gives an axis whose data is one value (a single record, a constant loss) a range the
// plotting library accepts: its tick placement refuses an empty range, including one that a
// pad smaller than the values' spacing leaves empty (a lone loss of 1e17).
func widen(lo, hi *float64) {
	if *hi-*lo > 1e-9*math.Max(math.Abs(*lo), math.Abs(*hi)) {
		return
	}
	pad := math.Max(math.Abs(*hi)*0.05, 0.5)
	*lo, *hi = *lo-pad, *hi+pad
}
