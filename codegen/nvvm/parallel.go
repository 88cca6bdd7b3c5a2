package nvvm

import (
	"regexp"
	"runtime"
	"sync"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/plan"
)

// programKernels is how many kernels one libNVVM program compiles. The programs run in
// parallel, at most GOMAXPROCS at once; the grouping is fixed, not derived from the number of
// threads, so the merged PTX is byte-identical on every machine. Each program links libdevice
// anew, which costs about as much as a kernel: docs/perf.md has the measurements behind the size.
// A variable only so that BenchmarkProgramKernels can measure other sizes.
var programKernels = 4

// compileAll compiles the distinct kernels uniq (users[c] are the kernels that run uniq[c]) in
// programs of programKernels and merges their PTX in kernel order. logs[c] are libNVVM's
// warnings that name uniq[c]. The error, if any, is that of the first kernel that failed.
func compileAll(lib *libnvvm.Lib, uniq []plan.Kernel, users [][]string, t plan.Target) (string, []string, error) {
	type program struct {
		kernels []plan.Kernel
		text    string
		log     string
		err     error
	}
	var progs []*program
	for i := 0; i < len(uniq); i += programKernels {
		progs = append(progs, &program{kernels: uniq[i:min(i+programKernels, len(uniq))]})
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, pr := range progs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			pr.text, pr.log, pr.err = compileProgram(lib, pr.kernels, t)
		}()
	}
	wg.Wait()
	texts := make([]string, len(progs))
	var logs []string
	for i, pr := range progs {
		if pr.err != nil {
			return "", nil, pr.err
		}
		texts[i] = pr.text
		for _, k := range pr.kernels {
			logs = append(logs, linesNaming(pr.log, k.Name))
		}
	}
	text, err := mergePTX(texts)
	if err != nil {
		return "", nil, err
	}
	return annotateUsers(text, uniq, users), logs, nil
}

// compileProgram compiles kernels as one libNVVM program. A failure is compiled again kernel
// by kernel to name the kernel at fault.
func compileProgram(lib *libnvvm.Lib, kernels []plan.Kernel, t plan.Target) (string, string, error) {
	m, _, err := build(kernels, t)
	if err != nil {
		return "", "", err
	}
	name := kernels[0].Name
	if len(kernels) > 1 {
		name = "module"
	}
	text, log, err := compile(lib, name, m, t)
	if err != nil && len(kernels) > 1 {
		for _, k := range kernels {
			mk, _, kerr := build([]plan.Kernel{k}, t)
			if kerr == nil {
				_, _, kerr = compile(lib, k.Name, mk, t)
			}
			if kerr != nil {
				return "", "", kerr
			}
		}
	}
	return text, log, err
}

// linesNaming are the lines of log that name kernel as a whole word.
func linesNaming(log, kernel string) string {
	re := regexp.MustCompile(`(?m)^.*(?:^|[^\w$])` + regexp.QuoteMeta(kernel) + `(?:$|[^\w$]).*$`)
	out := ""
	for _, l := range re.FindAllString(log, -1) {
		out += l + "\n"
	}
	return out
}
