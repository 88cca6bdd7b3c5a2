package tensorio_test

import (
	"bytes"
	"fmt"

	"github.com/gcomp/gcomp/tensorio"
)

func ExampleWriteNPY() {
	a := &tensorio.Array{DType: "i32", Shape: []int{2, 2}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}}
	var buf bytes.Buffer
	if err := tensorio.WriteNPY(&buf, a); err != nil {
		panic(err)
	}
	header, _, _ := bytes.Cut(buf.Bytes()[10:], []byte("\n"))
	fmt.Printf("%q, data at byte %d\n", bytes.TrimRight(header, " "), buf.Len()-len(a.Data))
	b, err := tensorio.ReadNPY(&buf)
	fmt.Println(b.DType, b.Shape, len(b.Data), err)

	_, err = tensorio.ReadNPY(bytes.NewReader(buf.Bytes()[:0]))
	fmt.Println(err)
	// Output:
	// "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", data at byte 128
	// i32 [2 2] 16 <nil>
	// tensorio: npy: truncated header: want 8 bytes of preamble, have 0
}
