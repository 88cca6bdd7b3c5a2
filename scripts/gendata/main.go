// Command gendata writes the small datasets the training tests and examples/linreg read, the same
// bytes on every run (math/rand/v2's PCG with fixed seeds):
//
//   - -csv FILE: a noisy linear function, y = 2·x1 - 3·x2 + 0.5·x3 + 1 + ε with ε ~ N(0, 0.1²),
//     x ~ N(0, 1): 512 rows under the header x1,x2,x3,y.
//   - -mixture DIR: a separable mixture of three Gaussian clusters in the plane (σ = 0.5, centres
//     6 apart), labels 0 to 2: x.npy f32[480,2], y.npy i64[480], test_x.npy f32[120,2],
//     test_y.npy i64[120].
//   - -linreg DIR: examples/linreg's regression, y = x·Wᵀ + b + ε for the LinearRegression(2, 5)
//     of the tutorial, ε ~ N(0, 0.05²): x.npy f32[256,2], y.npy f32[256,5], and a test set of 64.
//
// Usage (go generate in package train runs it): go run ./scripts/gendata -csv F -mixture D -linreg D
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// Noise is the standard deviation of the CSV's noise: a fitted model's mean squared error on
// it approaches Noise².
const Noise = 0.1

func main() {
	csvPath := flag.String("csv", "", "write the noisy linear function's CSV here")
	mixture := flag.String("mixture", "", "write the mixture's .npy files into this directory")
	linreg := flag.String("linreg", "", "write examples/linreg's .npy files into this directory")
	flag.Parse()
	for _, job := range []struct {
		path string
		fn   func(string) error
	}{{*csvPath, writeLinear}, {*mixture, writeMixture}, {*linreg, writeLinreg}} {
		if job.path == "" {
			continue
		}
		if err := job.fn(job.path); err != nil {
			fmt.Fprintln(os.Stderr, "gendata:", err)
			os.Exit(1)
		}
	}
}

func writeLinear(path string) error {
	rng := rand.New(rand.NewPCG(18, 1))
	var b bytes.Buffer
	b.WriteString("x1,x2,x3,y\n")
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for range 512 {
		x1, x2, x3 := rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
		y := 2*x1 - 3*x2 + 0.5*x3 + 1 + Noise*rng.NormFloat64()
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", f(x1), f(x2), f(x3), f(y))
	}
	return tensorio.WriteFileAtomic(path, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err })
}

func writeMixture(dir string) error {
	rng := rand.New(rand.NewPCG(18, 2))
	centres := [][2]float64{{-3, 0}, {3, 0}, {0, 5}}
	split := func(n int) (*tensor.Tensor, *tensor.Tensor) {
		x, y := tensor.New(ir.T(ir.F32, n, 2)), tensor.New(ir.T(ir.I64, n))
		for i := range n {
			c := rng.IntN(len(centres))
			for j := range 2 {
				x.F[2*i+j] = tensor.RoundFloat(ir.F32, centres[c][j]+0.5*rng.NormFloat64())
			}
			y.I[i] = int64(c)
		}
		return x, y
	}
	x, y := split(480)
	tx, ty := split(120)
	return writeNPYs(dir, map[string]*tensor.Tensor{"x": x, "y": y, "test_x": tx, "test_y": ty})
}

func writeLinreg(dir string) error {
	rng := rand.New(rand.NewPCG(18, 3))
	w := [5][2]float64{{1, -2}, {0.5, 0.5}, {-1, 3}, {2, 0}, {0, -1.5}}
	bias := [5]float64{0.5, -1, 0, 2, -0.5}
	split := func(n int) (*tensor.Tensor, *tensor.Tensor) {
		x, y := tensor.New(ir.T(ir.F32, n, 2)), tensor.New(ir.T(ir.F32, n, 5))
		for i := range n {
			x0, x1 := rng.NormFloat64(), rng.NormFloat64()
			x.F[2*i], x.F[2*i+1] = tensor.RoundFloat(ir.F32, x0), tensor.RoundFloat(ir.F32, x1)
			for k := range 5 {
				y.F[5*i+k] = tensor.RoundFloat(ir.F32, w[k][0]*x0+w[k][1]*x1+bias[k]+0.05*rng.NormFloat64())
			}
		}
		return x, y
	}
	x, y := split(256)
	tx, ty := split(64)
	return writeNPYs(dir, map[string]*tensor.Tensor{"x": x, "y": y, "test_x": tx, "test_y": ty})
}

func writeNPYs(dir string, ts map[string]*tensor.Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, t := range ts {
		if err := tensorio.WriteNPYFile(filepath.Join(dir, name+".npy"), t.Array()); err != nil {
			return err
		}
	}
	return nil
}
