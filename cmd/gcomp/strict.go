package main

import (
	"fmt"
	"strings"
)

// strictError reports, as PyTorch's load_state_dict(strict=True) does, both the model's
// parameters the weights file lacks and the file's tensors the model does not declare: a
// Sequential whose indices are off shows up as features.1.weight missing beside
// features.2.weight unexpected. missing holds "name (type)", in the model's order.
func strictError(weights string, missing, unexpected []string) error {
	src := weights + " does not hold"
	if weights == "" {
		src = "no --weights file holds"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gcomp: %s the model's parameters and --strict is set: missing %d: %s", src, len(missing), listNames(missing))
	if len(unexpected) > 0 {
		fmt.Fprintf(&b, "; unexpected %d: %s", len(unexpected), listNames(unexpected))
	}
	return fmt.Errorf("%s", b.String())
}
