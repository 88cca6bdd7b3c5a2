module github.com/gcomp/gcomp

go 1.24

require (
	github.com/ebitengine/purego v0.9.1
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/traefik/yaegi v0.16.1 // indirect
	golang.org/x/tools v0.30.0 // indirect
	gorgonia.org/cu v0.9.6
)
