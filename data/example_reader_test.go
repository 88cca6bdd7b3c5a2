package data_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// ReadCSV reads numeric columns under a header; the target column's values are the targets, the
// other columns the inputs. Errors name the file and the line.
func ExampleReadCSV() {
	d, err := data.ReadCSV("houses.csv", strings.NewReader("rooms,area,price\n3,70,210\n4,95,300\n"), "price")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.X.Type, d.X.F, d.Y.Type, d.Y.F)
	_, err = data.ReadCSV("bad.csv", strings.NewReader("rooms,area,price\n3,70,210\n4,95\n"), "price")
	fmt.Println(err)
	// Output:
	// f64[2,2] [3 70 4 95] f64[2] [210 300]
	// data: bad.csv:3: 2 fields, the header has 3
}

// ReadNPYDir reads x.npy and y.npy (and test_x.npy and test_y.npy when both are there).
func ExampleReadNPYDir() {
	train, test, err := data.ReadNPYDir("../train/testdata/mixture")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(train.X.Type, train.Y.Type, test.X.Type, test.Y.Type)
	// Output:
	// f32[480,2] i64[480] f32[120,2] i64[120]
}

// squares is a Dataset a program implements: row i is (i, i²), computed when asked for.
type squares int

func (s squares) Len() int { return int(s) }

func (s squares) Rows(rows []int) (x, y *tensor.Tensor, err error) {
	x, y = tensor.New(ir.T(ir.F32, len(rows), 1)), tensor.New(ir.T(ir.F32, len(rows)))
	for k, r := range rows {
		x.F[k], y.F[k] = float64(r), float64(r*r)
	}
	return x, y, nil
}

// A Loader hands out any Dataset in shuffled batches, the next prepared in the background.
func ExampleLoader() {
	loader := &data.Loader{Data: squares(10), Batch: 4, Shuffle: true, Seed: 1, DropLast: true}
	for b, err := range loader.Epoch(1) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(b.Index, b.X.F, b.Y.F)
	}
	// Output:
	// 0 [2 5 8 3] [4 25 64 9]
	// 1 [4 1 7 6] [16 1 49 36]
}
