package onnx

import (
	"fmt"
	"strings"
)

// Names are an imported model's graph inputs and outputs under the names the file gives them
// (what a user writes: torch.onnx.export's default names are "onnx::Gemm_0" and "4") and under
// the graph's, which ir restricts to letters, digits, '_' and '.' ("onnx__Gemm_0", "v4"). Users
// name tensors by the file's names; the graph's stay inside.
type Names struct {
	// Inputs are the graph inputs in the model's order (inputs bound by Options.Consts left
	// out); Outputs likewise.
	Inputs, Outputs []Name
}

// Names returns the model's names.
func (m *Model) Names() *Names {
	var n Names
	for _, in := range m.Inputs {
		if in.IR != "" {
			n.Inputs = append(n.Inputs, in)
		}
	}
	n.Outputs = m.Outputs
	return &n
}

// Input returns the graph's name of the input the file calls name.
func (n *Names) Input(name string) (string, bool) { return lookup(n.Inputs, name, false) }

// InputFile returns the file's name of graph input ir (ir itself if there is none).
func (n *Names) InputFile(ir string) string { return fileName(n.Inputs, ir) }

// Output returns the graph's name of the output the file calls name.
func (n *Names) Output(name string) (string, bool) { return lookup(n.Outputs, name, false) }

// OutputFile returns the file's name of graph output ir (ir itself if there is none).
func (n *Names) OutputFile(ir string) string { return fileName(n.Outputs, ir) }

// InputList lists the inputs by the file's names, quoted, for messages.
func (n *Names) InputList() string {
	if n == nil || len(n.Inputs) == 0 {
		return "none"
	}
	q := make([]string, len(n.Inputs))
	for i, x := range n.Inputs {
		q[i] = fmt.Sprintf("%q", x.ONNX)
	}
	return strings.Join(q, ", ")
}

func lookup(names []Name, name string, byIR bool) (string, bool) {
	for _, x := range names {
		if !byIR && x.ONNX == name {
			return x.IR, true
		}
		if byIR && x.IR == name {
			return x.ONNX, true
		}
	}
	return "", false
}

func fileName(names []Name, ir string) string {
	if n, ok := lookup(names, ir, true); ok {
		return n
	}
	return ir
}

// SafeFileNames derives a file name for each tensor name, for writing tensors into a folder: a
// name read from a model is untrusted ("../x", "a/b", "onnx::Gemm_0"), so characters other than
// letters, digits, '_', '-' and '.' become '_', a leading '.' becomes '_', and a name that
// would repeat an earlier one gets "_2", "_3", ... (compared case-insensitively, for file systems
// that fold case). The result is one file name per tensor name, in the order given.
func SafeFileNames(names []string) []string {
	out := make([]string, len(names))
	used := map[string]bool{}
	for i, name := range names {
		var sb strings.Builder
		for _, r := range name {
			if r == '_' || r == '-' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				sb.WriteRune(r)
			} else {
				sb.WriteByte('_')
			}
		}
		base := sb.String()
		if base == "" || base[0] == '.' {
			base = "_" + strings.TrimPrefix(base, ".")
		}
		if len(base) > 200 {
			base = base[:200]
		}
		f := base
		for k := 2; used[strings.ToLower(f)]; k++ {
			f = fmt.Sprintf("%s_%d", base, k)
		}
		used[strings.ToLower(f)] = true
		out[i] = f
	}
	return out
}
