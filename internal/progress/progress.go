// Package progress shows how far a training epoch has come: on a terminal a bar redrawn in
// place (github.com/schollz/progressbar) with the count, items per second, the running loss and
// the estimated time left; elsewhere (a log file, a pipe, CI) one plain line at the end of the
// epoch, and before it at most one every Interval while the epoch lasts, so a log holds a line
// per epoch (or per ten seconds of a long one) rather than one per update:
//
//	epoch 1/3: 6016/60000 images (10%), 2405.1 images/s, loss 0.8123, eta 22s
//
// The loss shown is the mean over the epoch so far, weighted by the items of each step.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Interval is the least time between two plain lines of an epoch: one that ends sooner prints
// its final line only.
const Interval = 10 * time.Second

// Bar is the progress of one run over Total items. It is not safe for concurrent use.
type Bar struct {
	w     io.Writer
	desc  string
	unit  string
	total int
	now   func() time.Time
	start time.Time

	done    int
	lossSum float64   // Σ loss·items
	last    time.Time // when the last plain line (or the start) was
	bar     *progressbar.ProgressBar
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New starts a bar for total items called unit ("images") under desc ("epoch 1/3"), drawn in
// place when w is a terminal and as plain lines otherwise.
func New(w io.Writer, desc, unit string, total int) *Bar {
	return newBar(w, desc, unit, total, IsTerminal(w), time.Now)
}

func newBar(w io.Writer, desc, unit string, total int, terminal bool, now func() time.Time) *Bar {
	b := &Bar{w: w, desc: desc, unit: unit, total: max(total, 0), now: now, start: now()}
	b.last = b.start
	if terminal {
		b.bar = progressbar.NewOptions(b.total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(unit),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	return b
}

// Add records that n more items are done, the last step's loss being loss.
func (b *Bar) Add(n int, loss float64) {
	b.done += n
	b.lossSum += loss * float64(n)
	if b.bar != nil {
		b.bar.Describe(fmt.Sprintf("%s loss %.4f", b.desc, b.Loss()))
		b.bar.Add(n)
		return
	}
	// a line once Interval has passed since the last (the final one is Finish's)
	if t := b.now(); b.done < b.total && t.Sub(b.last) >= Interval {
		b.last = t
		b.line(false)
	}
}

// Loss is the mean loss per item so far (0 before any item).
func (b *Bar) Loss() float64 {
	if b.done == 0 {
		return 0
	}
	return b.lossSum / float64(b.done)
}

// Finish ends the bar: on a terminal it completes the bar and ends its line, elsewhere it
// prints the final line with the elapsed time.
func (b *Bar) Finish() {
	if b.bar != nil {
		b.bar.Finish()
		return
	}
	b.line(true)
}

func (b *Bar) line(final bool) {
	elapsed := b.now().Sub(b.start)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(b.done) / s
	}
	pct := 100
	if b.total > 0 {
		pct = b.done * 100 / b.total
	}
	tail := "in " + round(elapsed).String()
	if !final {
		eta := time.Duration(0)
		if rate > 0 {
			eta = time.Duration(float64(b.total-b.done) / rate * float64(time.Second))
		}
		tail = "eta " + round(eta).String()
	}
	fmt.Fprintf(b.w, "%s: %d/%d %s (%d%%), %.1f %s/s, loss %.4f, %s\n",
		b.desc, b.done, b.total, b.unit, pct, rate, b.unit, b.Loss(), tail)
}

// round shortens a duration for display: whole seconds from 10 s on, tenths below.
func round(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
