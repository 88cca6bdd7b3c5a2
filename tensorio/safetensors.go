package tensorio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
)

// maxSTHeader bounds the JSON header, as the reference implementation does.
const maxSTHeader = 100 << 20

const metadataKey = "__metadata__"

// stEntry is one tensor's entry in the JSON header.
type stEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// ReadSafetensors parses a whole safetensors file held in data. The returned
// arrays' Data slices alias data (with their capacity clipped, so appending to
// one never overwrites another).
func ReadSafetensors(data []byte) (tensors map[string]*Array, metadata map[string]string, err error) {
	t, m, err := readSafetensors(data)
	if err != nil {
		return nil, nil, fmt.Errorf("tensorio: safetensors: %w", err)
	}
	return t, m, nil
}

// ReadSafetensorsFile reads the safetensors file at path. A regular file is read whole after its
// size is known; a pipe or device is read as far as its header says, never further, so
// /dev/zero costs nothing.
func ReadSafetensorsFile(path string) (map[string]*Array, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("tensorio: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("tensorio: %w", err)
	}
	var data []byte
	if st.Mode().IsRegular() || st.IsDir() {
		data, err = ReadFile(path, math.MaxInt64)
		if err != nil {
			return nil, nil, fmt.Errorf("tensorio: %w", err)
		}
	} else if data, err = readSafetensorsStream(f); err != nil {
		return nil, nil, fmt.Errorf("tensorio: %s: %w", path, err)
	}
	t, m, err := readSafetensors(data)
	if err != nil {
		return nil, nil, fmt.Errorf("tensorio: %s: %w", path, err)
	}
	return t, m, nil
}

// readSafetensorsStream reads a safetensors file from a stream of unknown length: the header
// length, the header, and then only as many bytes of data as the header's offsets reach (one
// more, to see trailing data), growing the buffer as the bytes arrive.
func readSafetensorsStream(r io.Reader) ([]byte, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("truncated header: %v", err)
	}
	hlen := binary.LittleEndian.Uint64(n[:])
	if hlen > maxSTHeader {
		return nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", hlen, maxSTHeader)
	}
	head, err := io.ReadAll(io.LimitReader(r, int64(hlen)))
	if err != nil {
		return nil, err
	}
	if uint64(len(head)) < hlen {
		return nil, fmt.Errorf("truncated header: want %d bytes, have %d", hlen, len(head))
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(head, &entries); err != nil {
		return nil, fmt.Errorf("bad header JSON: %v", err)
	}
	var end int64
	for name, raw := range entries {
		var e struct {
			DataOffsets []int64 `json:"data_offsets"`
		}
		if name != metadataKey && json.Unmarshal(raw, &e) == nil && len(e.DataOffsets) == 2 && e.DataOffsets[1] > end {
			end = e.DataOffsets[1]
		}
	}
	body, err := io.ReadAll(io.LimitReader(r, min(end, math.MaxInt64-1)+1))
	if err != nil {
		return nil, err
	}
	return append(append(n[:], head...), body...), nil
}

// WriteSafetensors writes tensors and metadata (which may be nil) to w.
// The output is deterministic: tensors are sorted by name and their data is
// laid out in that order.
func WriteSafetensors(w io.Writer, tensors map[string]*Array, metadata map[string]string) error {
	if err := writeSafetensors(w, tensors, metadata); err != nil {
		return fmt.Errorf("tensorio: safetensors: %w", err)
	}
	return nil
}

// WriteSafetensorsFile writes a safetensors file at path atomically.
func WriteSafetensorsFile(path string, tensors map[string]*Array, metadata map[string]string) error {
	return WriteFileAtomic(path, func(w io.Writer) error { return writeSafetensors(w, tensors, metadata) })
}

func readSafetensors(data []byte) (map[string]*Array, map[string]string, error) {
	hlen, err := stHeaderLen(data, int64(len(data)))
	if err != nil {
		return nil, nil, err
	}
	body := data[8+hlen:]
	entries, metadata, err := parseSTHeader(data[8:8+hlen], int64(len(body)))
	if err != nil {
		return nil, nil, err
	}
	tensors := make(map[string]*Array, len(entries))
	for _, e := range entries {
		e.Array.Data = body[e.Begin:e.End:e.End]
		tensors[e.Name] = e.Array
	}
	return tensors, metadata, nil
}

// stHeaderLen reads the header length from the first 8 bytes of a file of size bytes (prefix holds
// at least those 8 bytes when the file has them) and checks it against the limit and the file's
// real size, before anything is allocated.
func stHeaderLen(prefix []byte, size int64) (int64, error) {
	if size < 8 || len(prefix) < 8 {
		return 0, fmt.Errorf("truncated header: want 8 bytes of header length, have %d", size)
	}
	hlen := binary.LittleEndian.Uint64(prefix)
	if hlen > maxSTHeader {
		return 0, fmt.Errorf("header length %d exceeds the limit of %d bytes", hlen, maxSTHeader)
	}
	if hlen > uint64(size-8) {
		return 0, fmt.Errorf("truncated header: want %d bytes, have %d", hlen, size-8)
	}
	return int64(hlen), nil
}

// stTensor is one tensor of a validated header: its array without data and its byte span in the
// data section.
type stTensor struct {
	Name       string
	Array      *Array
	Begin, End int64
}

// parseSTHeader validates a safetensors JSON header against a data section of n bytes: names
// unique, dtypes known, sizes matching shapes, offsets tiling the data section exactly. It is the
// one header parser of the in-memory reader and the mapped file. Tensors are returned in offset
// order.
func parseSTHeader(head []byte, n int64) ([]stTensor, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("bad header JSON: want an object")
	}
	var spans []stTensor
	var metadata map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("bad header JSON: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, errors.New("bad header JSON: want a string key")
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("duplicate key %q", name)
		}
		seen[name] = true
		if name == metadataKey {
			if err := dec.Decode(&metadata); err != nil {
				return nil, nil, fmt.Errorf("bad %s: %v", metadataKey, err)
			}
			continue
		}
		var e stEntry
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("tensor %q: bad header JSON: %v", name, err)
		}
		a, begin, end, err := e.array(n)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		spans = append(spans, stTensor{name, a, begin, end})
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("bad header JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("bad header JSON: trailing data after the object")
	}
	// The tensors must tile the data section exactly, in offset order.
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].Begin != spans[j].Begin {
			return spans[i].Begin < spans[j].Begin
		}
		return spans[i].End < spans[j].End
	})
	var at int64
	for i, s := range spans {
		switch {
		case s.Begin < at:
			return nil, nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q", s.Name, s.Begin, s.End, spans[i-1].Name)
		case s.Begin > at:
			return nil, nil, fmt.Errorf("tensor %q: gap in data before offset %d", s.Name, s.Begin)
		}
		at = s.End
	}
	if at != n {
		return nil, nil, fmt.Errorf("data section is %d bytes but tensors cover %d", n, at)
	}
	return spans, metadata, nil
}

// array validates e against a data section of n bytes and returns the
// array without data and its offsets.
func (e *stEntry) array(n int64) (*Array, int64, int64, error) {
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return nil, 0, 0, errors.New("want dtype, shape and data_offsets")
	}
	d, ok := lookup(byST, *e.DType)
	if !ok {
		return nil, 0, 0, fmt.Errorf("unknown dtype %q", *e.DType)
	}
	shape := make([]int, len(*e.Shape))
	for i, v := range *e.Shape {
		if v < 0 || v > int64(maxInt) {
			return nil, 0, 0, fmt.Errorf("bad dimension %d in shape", v)
		}
		shape[i] = int(v)
	}
	size, err := byteSize(shape, d.size)
	if err != nil {
		return nil, 0, 0, err
	}
	off := *e.DataOffsets
	if len(off) != 2 {
		return nil, 0, 0, fmt.Errorf("data_offsets has %d entries, want 2", len(off))
	}
	begin, end := off[0], off[1]
	if begin < 0 || end < begin || end > n {
		return nil, 0, 0, fmt.Errorf("data_offsets [%d, %d] out of range of the %d-byte data section", begin, end, n)
	}
	if end-begin != int64(size) {
		return nil, 0, 0, fmt.Errorf("data_offsets [%d, %d] span %d bytes, but %s%v needs %d", begin, end, end-begin, d.name, shape, size)
	}
	return &Array{DType: d.name, Shape: shape}, begin, end, nil
}

func writeSafetensors(w io.Writer, tensors map[string]*Array, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		names = append(names, name)
	}
	slices.Sort(names)

	var hdr bytes.Buffer
	hdr.WriteByte('{')
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata) // keys sorted by encoding/json
		if err != nil {
			return err
		}
		fmt.Fprintf(&hdr, "%q:%s", metadataKey, m)
	}
	var off int64
	for i, name := range names {
		if name == metadataKey {
			return fmt.Errorf("tensor name %q is reserved", name)
		}
		a := tensors[name]
		d, err := a.check()
		if err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
		k, _ := json.Marshal(name)
		shape, _ := json.Marshal(a.Shape)
		if string(shape) == "null" {
			shape = []byte("[]")
		}
		if i > 0 || len(metadata) > 0 {
			hdr.WriteByte(',')
		}
		end := off + int64(len(a.Data))
		fmt.Fprintf(&hdr, `%s:{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, k, d.st, shape, off, end)
		off = end
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(hdr.Len()))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return err
	}
	for _, name := range names {
		if _, err := w.Write(tensors[name].Data); err != nil {
			return err
		}
	}
	return nil
}
