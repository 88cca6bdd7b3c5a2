package executor

import (
	"encoding/binary"
	"fmt"

	"github.com/gcomp/gcomp/artifact"
)

// allocateErrors allocates and zeroes the plan's error area, where kernels whose gathers meet an
// index outside their table record it (artifact.ErrorWordBytes per such launch).
func (p *Program) allocateErrors() error {
	n := p.plan.ErrorBytes
	if n == 0 {
		return nil
	}
	var err error
	if p.errors, err = p.alloc(n, "index errors"); err != nil {
		return fmt.Errorf("allocating the %d-byte error area: %v", n, err)
	}
	p.mem.ScratchBytes += n
	return p.dev.Zero(p.errors, n)
}

// checkIndices reads the error area after a run and fails the run with the first launch's
// record, in plan order (the launch that met a bad index first; later ones read what it
// wrote), naming the gather, the element of its indices and the index, as the reference
// interpreter does. The area is zeroed again for the next run.
func (p *Program) checkIndices() error {
	n := p.plan.ErrorBytes
	if n == 0 {
		return nil
	}
	area := make([]byte, n)
	if err := p.dev.Read(area, p.errors); err != nil {
		return fmt.Errorf("reading the index error area: %v", err)
	}
	for _, k := range p.plan.Kernels {
		for _, a := range k.Args {
			if a.Kind != artifact.ArgError {
				continue
			}
			w := area[a.Offset : a.Offset+artifact.ErrorWordBytes]
			site := binary.LittleEndian.Uint64(w)
			if site == 0 {
				continue
			}
			if err := p.dev.Zero(p.errors, n); err != nil {
				return err
			}
			elem, value := binary.LittleEndian.Uint64(w[8:]), int64(binary.LittleEndian.Uint64(w[16:]))
			if site > uint64(len(k.IndexChecks)) {
				return fmt.Errorf("kernel %s: index %d (element %d) is out of range at gather %d, which the plan does not describe", k.Name, value, elem, site)
			}
			c := k.IndexChecks[site-1]
			where := c.Op
			if c.Pos != "" {
				where = c.Pos + ": " + where
			}
			return fmt.Errorf("%s (kernel %s): index %d (element %d of %s) is out of range [0, %d) for table %s",
				where, k.Name, value, elem, c.Indices, c.Rows, c.Table)
		}
	}
	return nil
}
