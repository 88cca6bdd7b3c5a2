package paramcheck_test

// Every test package imports internal/golden so that `go test ./... -update` is accepted here.
import _ "github.com/gcomp/gcomp/internal/golden"
