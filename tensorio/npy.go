package tensorio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

const npyMagic = "\x93NUMPY"

// maxNPYHeader bounds the header a reader accepts; NumPy itself refuses
// headers over 10000 bytes unless told otherwise.
const maxNPYHeader = 1 << 20

// ReadNPY reads one array in NumPy's .npy format from r. It consumes exactly
// the header and the array's data.
func ReadNPY(r io.Reader) (*Array, error) {
	a, err := readNPY(r)
	if err != nil {
		return nil, fmt.Errorf("tensorio: npy: %w", err)
	}
	return a, nil
}

// ReadNPYChecked is ReadNPY with check called on the header's dtype and shape before any data is
// read, so that a caller refuses an array its memory budget cannot hold before it streams in.
func ReadNPYChecked(r io.Reader, check func(dtype string, shape []int) error) (*Array, error) {
	a, err := readNPYChecked(r, check)
	if err != nil {
		return nil, fmt.Errorf("tensorio: npy: %w", err)
	}
	return a, nil
}

// ReadNPYFile reads the .npy file at path.
func ReadNPYFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tensorio: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("tensorio: %s: is a directory, not a .npy file", path)
	}
	a, err := readNPY(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("tensorio: %s: %w", path, err)
	}
	return a, nil
}

// WriteNPY writes a to w in .npy format: version 1.0 (2.0 if the header is
// too long for 1.0), little-endian, C order.
func WriteNPY(w io.Writer, a *Array) error {
	if err := writeNPY(w, a); err != nil {
		return fmt.Errorf("tensorio: npy: %w", err)
	}
	return nil
}

// WriteNPYFile writes a to the file at path atomically.
func WriteNPYFile(path string, a *Array) error {
	return WriteFileAtomic(path, func(w io.Writer) error { return writeNPY(w, a) })
}

func readNPY(r io.Reader) (*Array, error) { return readNPYChecked(r, nil) }

// headerError is a short read of the header: "truncated" when the stream ended, else the
// stream's own error (a corrupt compressed stream is not a truncated header).
func headerError(err error, what string, n int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated header: want %s, have %d", what, n)
	}
	return fmt.Errorf("reading the header: %w", err)
}

func readNPYChecked(r io.Reader, check func(dtype string, shape []int) error) (*Array, error) {
	var pre [8]byte
	if n, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, headerError(err, "8 bytes of preamble", n)
	}
	if string(pre[:6]) != npyMagic {
		return nil, fmt.Errorf("bad magic %q, not a .npy file", pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen int
	switch major {
	case 1:
		var b [2]byte
		if n, err := io.ReadFull(r, b[:]); err != nil {
			return nil, headerError(err, "2 bytes of header length", n)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if n, err := io.ReadFull(r, b[:]); err != nil {
			return nil, headerError(err, "4 bytes of header length", n)
		}
		h := binary.LittleEndian.Uint32(b[:])
		if h > maxNPYHeader {
			return nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", h, maxNPYHeader)
		}
		hlen = int(h)
	default:
		return nil, fmt.Errorf("unsupported format version %d.%d", major, minor)
	}
	hdr := make([]byte, hlen)
	if n, err := io.ReadFull(r, hdr); err != nil {
		return nil, headerError(err, fmt.Sprintf("%d bytes", hlen), n)
	}
	h, err := parseNPYHeader(string(hdr))
	if err != nil {
		return nil, fmt.Errorf("bad header %q: %w", truncate(string(hdr), 100), err)
	}
	size, err := byteSize(h.shape, h.dtype.size)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(h.dtype.name, h.shape); err != nil {
			return nil, err
		}
	}
	// Read through a growing buffer so a header that declares a huge array
	// costs memory only for data that is actually there.
	var buf bytes.Buffer
	if size <= 1<<20 {
		buf.Grow(size)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, int64(size)))
	if err != nil {
		return nil, fmt.Errorf("reading data: %w", err)
	}
	if n != int64(size) {
		return nil, fmt.Errorf("truncated data: want %d bytes, have %d", size, n)
	}
	a := &Array{DType: h.dtype.name, Shape: h.shape, Data: buf.Bytes()}
	if h.bigEndian {
		swapBytes(a.Data, h.dtype.size)
	}
	if h.fortran {
		a.Data = fortranToC(a.Data, a.Shape, h.dtype.size)
	}
	return a, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// swapBytes reverses the bytes of every size-byte element of data.
func swapBytes(data []byte, size int) {
	for i := 0; i+size <= len(data); i += size {
		e := data[i : i+size]
		for j, k := 0, size-1; j < k; j, k = j+1, k-1 {
			e[j], e[k] = e[k], e[j]
		}
	}
}

// fortranToC returns the elements of data, stored column-major with the
// given shape, in row-major order.
func fortranToC(data []byte, shape []int, size int) []byte {
	if len(shape) < 2 || len(data) == 0 {
		return data
	}
	out := make([]byte, len(data))
	// fstride[k] is the Fortran-order byte stride of dimension k.
	fstride := make([]int, len(shape))
	s := size
	for k := range shape {
		fstride[k] = s
		s *= shape[k]
	}
	idx := make([]int, len(shape))
	src := 0
	for dst := 0; dst < len(out); dst += size {
		copy(out[dst:dst+size], data[src:src+size])
		// Advance the C-order index, last dimension fastest.
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			src += fstride[k]
			if idx[k] < shape[k] {
				break
			}
			src -= idx[k] * fstride[k]
			idx[k] = 0
		}
	}
	return out
}

type npyHeader struct {
	dtype     dtypeInfo
	bigEndian bool
	fortran   bool
	shape     []int
}

// parseNPYHeader parses the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
func parseNPYHeader(s string) (npyHeader, error) {
	var h npyHeader
	p := &pyParser{s: strings.TrimRight(s, " \t\r\n\x00")}
	seen := map[string]bool{}
	if !p.eat('{') {
		return h, errors.New("want '{'")
	}
	for !p.eat('}') {
		key, err := p.str()
		if err != nil {
			return h, fmt.Errorf("dict key: %w", err)
		}
		if seen[key] {
			return h, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if !p.eat(':') {
			return h, fmt.Errorf("want ':' after %q", key)
		}
		switch key {
		case "descr":
			descr, err := p.str()
			if err != nil {
				return h, fmt.Errorf("descr: %w", err)
			}
			if h.dtype, h.bigEndian, err = parseDescr(descr); err != nil {
				return h, err
			}
		case "fortran_order":
			switch {
			case p.word("True"):
				h.fortran = true
			case p.word("False"):
			default:
				return h, errors.New("fortran_order: want True or False")
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return h, fmt.Errorf("shape: %w", err)
			}
		default:
			return h, fmt.Errorf("unexpected key %q", key)
		}
		if !p.eat(',') {
			if !p.eat('}') {
				return h, errors.New("want ',' or '}'")
			}
			break
		}
	}
	p.space()
	if p.i != len(p.s) {
		return h, errors.New("trailing characters after '}'")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key %q", k)
		}
	}
	return h, nil
}

// parseDescr maps a NumPy type string such as "<f4" to a dtype.
func parseDescr(descr string) (dtypeInfo, bool, error) {
	if len(descr) < 2 {
		return dtypeInfo{}, false, fmt.Errorf("unsupported dtype %q", descr)
	}
	d, ok := lookup(byNPY, descr[1:])
	switch {
	case !ok:
		return d, false, fmt.Errorf("unsupported dtype %q", descr)
	case descr[0] == '>':
		return d, true, nil
	case descr[0] == '<' || descr[0] == '=' || descr[0] == '|':
		return d, false, nil
	}
	return d, false, fmt.Errorf("unsupported byte order in dtype %q", descr)
}

// pyParser reads the few Python literals a .npy header holds.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) word(w string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a quoted string without escapes.
func (p *pyParser) str() (string, error) {
	p.space()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("want a quoted string")
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

// tuple reads a tuple of non-negative integers: (), (3,), (2, 3).
func (p *pyParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("want '('")
	}
	shape := []int{}
	for !p.eat(')') {
		p.space()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		d, err := strconv.Atoi(p.s[p.i:j])
		if err != nil {
			return nil, errors.New("want a non-negative integer")
		}
		p.i = j
		p.word("L") // Python 2 long literals
		shape = append(shape, d)
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, errors.New("want ',' or ')'")
			}
			break
		}
	}
	return shape, nil
}

func writeNPY(w io.Writer, a *Array) error {
	d, err := a.check()
	if err != nil {
		return err
	}
	if d.npy == "" {
		return fmt.Errorf("dtype %s has no NumPy equivalent", d.name)
	}
	order := "<"
	if d.size == 1 {
		order = "|"
	}
	var shape strings.Builder
	shape.WriteByte('(')
	for i, n := range a.Shape {
		if i > 0 {
			shape.WriteString(", ")
		}
		shape.WriteString(strconv.Itoa(n))
	}
	if len(a.Shape) == 1 {
		shape.WriteByte(',')
	}
	shape.WriteByte(')')
	dict := fmt.Sprintf("{'descr': '%s%s', 'fortran_order': False, 'shape': %s, }", order, d.npy, shape.String())

	// Pad with spaces and a newline so the data starts 64-byte aligned.
	major, pre := byte(1), 10
	if len(dict)+1+pre+63 > 0xffff {
		major, pre = 2, 12
	}
	total := (pre + len(dict) + 1 + 63) / 64 * 64
	hdr := make([]byte, 0, total)
	hdr = append(hdr, npyMagic...)
	hdr = append(hdr, major, 0)
	if major == 1 {
		hdr = binary.LittleEndian.AppendUint16(hdr, uint16(total-pre))
	} else {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(total-pre))
	}
	hdr = append(hdr, dict...)
	for len(hdr) < total-1 {
		hdr = append(hdr, ' ')
	}
	hdr = append(hdr, '\n')
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}
