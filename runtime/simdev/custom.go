package simdev

import (
	"errors"
	"regexp"
	"strings"

	"github.com/gcomp/gcomp/sim"
)

// narrowScalars passes a 32-bit .param (a custom kernel's i32 or f32 scalar, whose bits the
// executor puts in the low half of a Ptr) as 4 bytes: the simulator checks each argument's
// size against its declaration, as gcomp's own kernels take only 64-bit pointers.
func narrowScalars(m *sim.Module, kernel string, vals []any) {
	ps, err := m.Params(kernel)
	if err != nil || len(ps) != len(vals) {
		return // Launch reports it
	}
	for i, p := range ps {
		if p.Size == 4 {
			vals[i] = uint32(vals[i].(uint64))
		}
	}
}

// sourceError is a simulator error in a kernel compiled with line information (a custom
// kernel from NVRTC's -lineinfo): it leads with the user's source position.
type sourceError struct {
	pos string
	err error
}

func (e *sourceError) Error() string { return e.pos + ": " + e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

var (
	reLoc  = regexp.MustCompile(`^\s*\.loc\s+(\d+)\s+(\d+)`)
	reFile = regexp.MustCompile(`^\s*\.file\s+(\d+)\s+"([^"]*)"`)
)

// withSource adds to a simulator error the source position of the PTX line it names: the
// last .loc before it in the same function, through the module's .file table.
func withSource(ptx []byte, err error) error {
	var se *sim.Error
	if !errors.As(err, &se) {
		return err
	}
	lines := strings.Split(string(ptx), "\n")
	files := map[string]string{}
	for _, l := range lines {
		if m := reFile.FindStringSubmatch(l); m != nil {
			files[m[1]] = m[2]
		}
	}
	pos := ""
	for i := 0; i < se.Line-1 && i < len(lines); i++ {
		l := lines[i]
		if strings.Contains(l, ".entry") || strings.Contains(l, ".func") {
			pos = "" // line information does not cross functions
		}
		if m := reLoc.FindStringSubmatch(l); m != nil && files[m[1]] != "" && m[2] != "0" {
			pos = files[m[1]] + ":" + m[2]
		}
	}
	if pos == "" {
		return err
	}
	return &sourceError{pos: pos, err: err}
}
