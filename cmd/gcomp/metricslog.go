package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
)

// truncateLog cuts the metrics log at path back to what a checkpoint of epoch after steps steps
// knows: it drops every record from the first one past the checkpoint (a step record of a later
// step, the summary of a later epoch) or the first line that is no record (an interrupted write),
// so that training resumed from the checkpoint continues the log without repeating a step. A
// missing log, or one that is not a regular file, is left alone.
func truncateLog(path string, epoch, steps int) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return err
	}
	keep, err := logPrefix(bufio.NewReaderSize(f, maxMetricsLine), epoch, steps)
	if err != nil {
		return err
	}
	return f.Truncate(keep)
}

// logPrefix returns how many bytes of the log r are records of the checkpoint's history.
func logPrefix(r *bufio.Reader, epoch, steps int) (int64, error) {
	var keep int64
	for {
		line, err := r.ReadSlice('\n')
		switch {
		case err == nil:
		case err == io.EOF || errors.Is(err, bufio.ErrBufferFull):
			// The end, a last line whose write was cut short, or an over-long line.
			return keep, nil
		default:
			return 0, err
		}
		if text := bytes.TrimSpace(line); len(text) > 0 {
			m, err := parseMetric(text)
			if err != nil || m.step > steps || m.step == 0 && m.epoch > epoch {
				return keep, nil
			}
		}
		keep += int64(len(line))
	}
}
