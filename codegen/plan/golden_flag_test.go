package plan

import _ "github.com/gcomp/gcomp/internal/golden" // registers -update for this package
