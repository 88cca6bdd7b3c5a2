package sym

import _ "github.com/gcomp/gcomp/internal/golden"
