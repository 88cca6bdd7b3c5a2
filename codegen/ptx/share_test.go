package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
)

// shareModels are the models whose modules the sharing tests look at: every example and GPT-2
// small (12 identical blocks).
func shareModels() []examples.Example {
	return append(examples.All(), examples.Example{Name: "gpt2small", Model: gpt.GPT2Small})
}

// moduleKernels are the kernels the pass pipeline forms for a model, named as the passes name them.
func moduleKernels(t testing.TB, m func(*frontend.Builder)) []Kernel {
	t.Helper()
	g, err := frontend.Build("m", m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kernels []Kernel
	for _, kn := range res.Kernels.Kernels {
		kernels = append(kernels, kernelOf(kn, kn.Name))
	}
	return kernels
}

var commentLine = regexp.MustCompile(`(?m)^\s*//.*\n`)

// anonymous is an entry's text without comments and with its name (in the .entry line, its
// parameters, labels and globals) replaced: what two kernels must differ in to need two entries.
func anonymous(text, name string) string {
	return strings.ReplaceAll(commentLine.ReplaceAllString(text, ""), name, "K")
}

// A kernel launched through another's entry generates, on its own, that entry's code up to its
// name and comments, and its launch is the one it would have had: the same configuration and its
// own buffers in the same parameter order.
func TestSharedKernelsGenerateTheSameCode(t *testing.T) {
	for _, m := range shareModels() {
		t.Run(m.Name, func(t *testing.T) {
			kernels := moduleKernels(t, m.Model)
			_, launches, err := Module(kernels, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			own := map[string]string{} // entry name → its anonymous text
			shared := 0
			for i, k := range kernels {
				text, want, err := Generate(k, Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				got := launches[i]
				if got.Entry == k.Name {
					own[k.Name] = anonymous(text, k.Name)
					continue
				}
				shared++
				if a := anonymous(text, k.Name); a != own[got.Entry] {
					t.Errorf("%s runs %s, but its own code differs", k.Name, got.Entry)
				}
				got.Entry = ""
				if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
					t.Errorf("%s through %s:\n got %s\nwant %s", k.Name, launches[i].Entry, g, w)
				}
			}
			t.Logf("%d kernels, %d entries", len(kernels), len(kernels)-shared)
		})
	}
}

// No two entries of any example's module, or of GPT-2 small's, have the same code up to their
// names: each distinct kernel is in the module once.
func TestModuleEntriesAreDistinct(t *testing.T) {
	for _, m := range shareModels() {
		t.Run(m.Name, func(t *testing.T) {
			text, launches, err := Module(moduleKernels(t, m.Model), Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			bodies := map[string]string{}
			entries := strings.Split(text, ".visible .entry ")[1:]
			for _, e := range entries {
				name := e[:strings.IndexByte(e, '(')]
				// The next entry's comments and globals are part of this piece; they do not
				// change what the entry computes, and globals are named after their entry.
				body := anonymous(e, name)
				// Persistent kernels are not shared by design (ShareKey): two layers' equal
				// chains of stages (llama's) keep an entry each.
				if prev, ok := bodies[body]; ok && !(strings.HasSuffix(prev, "_persistent") && strings.HasSuffix(name, "_persistent")) {
					t.Errorf("%s and %s have the same body", prev, name)
				}
				bodies[body] = name
			}
			distinct := map[string]bool{}
			for _, l := range launches {
				distinct[l.Entry] = true
			}
			if len(entries) != len(distinct) {
				t.Errorf("the module has %d entries; the launches run %d", len(entries), len(distinct))
			}
		})
	}
}
