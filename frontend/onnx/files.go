package onnx

import (
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// MaxFileBytes bounds an .onnx model and a .pb tensor file: protobuf's 2 GB message limit (larger
// models keep their weights in external data files, which are read separately).
const MaxFileBytes = 2 << 30

// maxStreamBytes bounds a model or tensor file that is not a regular file (a pipe, /dev/zero),
// whose length is known only by reading it; a variable so tests can lower it.
var maxStreamBytes int64 = tensorio.MaxStreamBytes

// ReadModelFile reads a model or tensor file: a regular file's size is checked against MaxFileBytes
// before it is read, anything else is read up to maxStreamBytes, and a named pipe without a
// writer is an error instead of an open that never returns.
func ReadModelFile(path string) ([]byte, error) {
	f, st, err := tensorio.OpenRead(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Mode().IsRegular() {
		if st.Size() > MaxFileBytes {
			return nil, fmt.Errorf("%s: the file is %d bytes, more than the limit of %d", path, st.Size(), int64(MaxFileBytes))
		}
		data := make([]byte, st.Size())
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, fmt.Errorf("%s: %v (the file shrank while being read?)", path, err)
		}
		return data, nil
	}
	data, err := io.ReadAll(tensorio.LimitReader(f, maxStreamBytes, "the limit for a file that is not a regular file"))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return data, nil
}

// ReadTensorFile reads an ONNX TensorProto file (a .pb, as ONNX's test data stores inputs and
// outputs). External data is refused: a tensor file given on the command line holds its values.
func ReadTensorFile(path string) (*tensor.Tensor, error) {
	data, err := ReadModelFile(path)
	if err != nil {
		return nil, err
	}
	var p onnxpb.TensorProto
	if err := proto.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: not an ONNX TensorProto: %v", path, err)
	}
	t, err := Tensor(&p, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return t, nil
}
