package collective

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadCall: a request from the network is checked before its bytes are
// allocated, and never panics.
func FuzzReadCall(f *testing.F) {
	var good bytes.Buffer
	binary.Write(&good, le, callHeader{Seq: 1, Kind: uint8(allReduce), DType: 1, Count: 2, Len: 8})
	good.Write(make([]byte, 8))
	f.Add(good.Bytes())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, c, data, err := readCall(bufio.NewReader(bytes.NewReader(b)), frameCall, 3, 1<<20)
		if err == nil {
			if int64(len(data)) > 1<<20 {
				t.Fatalf("accepted %d bytes", len(data))
			}
			if c.validate(3) != nil {
				t.Fatalf("accepted an invalid call %v", c)
			}
		}
	})
}
