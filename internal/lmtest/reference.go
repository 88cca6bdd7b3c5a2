package lmtest

import (
	"encoding/json"
	"os"
)

// Reference is lm/testdata/reference.json, written by scripts/lm_reference.py.
type Reference struct {
	Cases []Case `json:"cases"`
}

// A Case is one model: its config.json, weights' dtype, a prompt and what greedy decoding gives.
type Case struct {
	Name      string         `json:"name"`
	DType     string         `json:"dtype"` // f32, bf16: the checkpoint's
	Config    map[string]any `json:"config"`
	Prompt    []int          `json:"prompt"`
	ProbeIDs  []int          `json:"probe_ids"`
	Generated []int          `json:"generated"`
	Steps     []Step         `json:"steps"`
}

// A Step is the next-token logits after the prompt and each generated token, in float64:
// whole for a small vocabulary, else at ProbeIDs, with the top 8 and the norm.
type Step struct {
	Argmax int       `json:"argmax"`
	Norm   float64   `json:"norm"`
	TopIDs []int     `json:"top_ids"`
	Top    []float64 `json:"top"`
	Logits []float64 `json:"logits"`
	Probe  []float64 `json:"probe"`
}

// ReadReference reads the reference file at path.
func ReadReference(path string) (*Reference, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Reference
	return &r, json.Unmarshal(data, &r)
}
