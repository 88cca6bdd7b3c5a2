package artifact

import "fmt"

// ErrorWordBytes is the size of one launch's error word in the error area: u64 site, u64
// element, i64 value, and 8 bytes of padding. A kernel whose gathers find an index outside their
// table records the first one there (site ≥ 1, IndexCheck.Site) instead of trapping; the
// executor reads the area after a run and fails the run with the check's description.
const ErrorWordBytes = 32

// IndexCheck describes one gather site of a kernel, for the error a bad index gives.
type IndexCheck struct {
	Site    int    `json:"site"`
	Op      string `json:"op"`            // the gather in the kernel graph's text form
	Pos     string `json:"pos,omitempty"` // its source position
	Indices string `json:"indices"`       // the indices' buffer (an input's name) or value name
	Table   string `json:"table"`         // the table's type
	Rows    int    `json:"rows"`          // valid indices lie in [0, Rows)
}

// validateChecks checks k's error-word argument against ErrorBytes and its checks: one error
// argument exactly where there are checks, in its own word, and sites numbered 1, 2, ...
func (p *Plan) validateChecks(k Kernel) error {
	n := 0
	for i, a := range k.Args {
		if a.Kind != ArgError {
			continue
		}
		n++
		if a.Offset < 0 || a.Offset%ErrorWordBytes != 0 || a.Offset > p.ErrorBytes-ErrorWordBytes {
			return fmt.Errorf("kernel %s argument %d: error word at %d is not a word of the %d-byte error area", k.Name, i, a.Offset, p.ErrorBytes)
		}
	}
	if (n == 0) != (len(k.IndexChecks) == 0) || n > 1 {
		return fmt.Errorf("kernel %s: %d error words for %d index checks", k.Name, n, len(k.IndexChecks))
	}
	for i, c := range k.IndexChecks {
		if c.Site != i+1 || c.Rows < 0 {
			return fmt.Errorf("kernel %s: index check %d has site %d and %d rows", k.Name, i, c.Site, c.Rows)
		}
	}
	return nil
}
