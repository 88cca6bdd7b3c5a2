module github.com/gcomp/gcomp

go 1.24

require (
	github.com/ebitengine/purego v0.9.1
	github.com/google/go-cmp v0.7.0
	github.com/schollz/progressbar/v3 v3.18.0
	github.com/traefik/yaegi v0.16.1
	golang.org/x/term v0.30.0
	golang.org/x/tools v0.30.0
	gonum.org/v1/plot v0.15.2
	google.golang.org/protobuf v1.36.12
	gorgonia.org/cu v0.9.6
)

require (
	codeberg.org/go-fonts/liberation v0.4.1 // indirect
	codeberg.org/go-latex/latex v0.0.1 // indirect
	codeberg.org/go-pdf/fpdf v0.10.0 // indirect
	git.sr.ht/~sbinet/gg v0.6.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/llir/llvm v0.3.6
	github.com/mewmew/float v0.0.0-20201204173432-505706aa38fa // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/image v0.24.0 // indirect
	golang.org/x/mod v0.23.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	golang.org/x/sys v0.31.0
	golang.org/x/text v0.22.0
)
