package data

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// ReadCSVFile reads a dataset from a CSV file (RFC 4180, encoding/csv): a header naming the
// columns, then one row per line of numbers (strconv.ParseFloat's syntax). The column named
// target is the row's target, f64[N]; the others, in order, its input, f64[N,K].
func ReadCSVFile(path, target string) (*Tensors, error) {
	f, _, err := tensorio.OpenRead(path) // a FIFO without a writer reads as empty, never blocks
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	return ReadCSV(path, f, target)
}

// utf8BOM is the byte-order mark Excel and Windows tools put before a UTF-8 file's first byte.
const utf8BOM = "\ufeff"

// ReadCSV is ReadCSVFile on r; name is the file's name for messages. At most the data memory
// budget (SetMemoryBudget) is read from r, and held as numbers: a stream without end
// (/dev/zero) is refused there.
func ReadCSV(name string, r io.Reader, target string) (*Tensors, error) {
	limit := budget()
	br := bufio.NewReader(tensorio.LimitReader(r, limit, budgetName))
	if bom, err := br.Peek(len(utf8BOM)); err == nil && string(bom) == utf8BOM {
		br.Discard(len(utf8BOM)) // as Python's encoding="utf-8-sig" does
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1 // checked below, with the header's count in the message
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("data: %s: empty, want a header naming the columns", name)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	cols := make([]string, len(header))
	col := -1
	for i, h := range header {
		cols[i] = strings.TrimSpace(h)
		if cols[i] == target {
			if col >= 0 {
				return nil, fmt.Errorf("data: %s:1: two columns named %q", name, target)
			}
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("data: %s:1: no column %q (the columns are %s)", name, target, strings.Join(cols, ", "))
	}
	if len(cols) < 2 {
		return nil, fmt.Errorf("data: %s:1: only the target column %q, no inputs", name, target)
	}
	var xs, ys []float64
	var lines []int
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols) {
			return nil, fmt.Errorf("data: %s:%d: %d fields, the header has %d", name, line, len(rec), len(cols))
		}
		for i, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				if ne := (*strconv.NumError)(nil); errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
					return nil, fmt.Errorf("data: %s:%d: column %s: %q is out of the range of a float64", name, line, cols[i], s)
				}
				return nil, fmt.Errorf("data: %s:%d: column %s: %q is not a number", name, line, cols[i], s)
			}
			if i == col {
				ys = append(ys, v)
			} else {
				xs = append(xs, v)
			}
		}
		lines = append(lines, line)
		// Each row holds its numbers and its line, 8 bytes each.
		if held := int64(len(xs)+len(ys)+len(lines)) * 8; held > limit {
			return nil, fmt.Errorf("data: %s:%d: the rows so far hold %d bytes, more than %s (%d bytes)", name, line, held, budgetName, limit)
		}
	}
	n := len(ys)
	if n == 0 {
		return nil, fmt.Errorf("data: %s: a header and no rows", name)
	}
	x := tensor.FromFloats(ir.T(ir.F64, n, len(cols)-1), xs)
	y := tensor.FromFloats(ir.T(ir.F64, n), ys)
	return &Tensors{Name: name, X: x, Y: y, Lines: lines}, nil
}

// csvError is encoding/csv's error with the file's name and the line first.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("data: %s:%d: %v", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("data: %s: %v", name, err)
}
