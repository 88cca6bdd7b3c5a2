// Package onnxpb holds the Go types of ONNX's model format, generated from
// onnx.proto (ONNX 1.12: IR version 8, opset 17; the copy here is the one
// Debian's python3-onnx 1.12.0 ships, plus ONNX 1.16's UINT4 and INT4 element types) by protoc
// 3.21.12 (Debian bookworm's protobuf-compiler) with protoc-gen-go v1.36.12. Do not edit onnx.pb.go;
// regenerate it with
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go generate ./frontend/onnx/onnxpb
//
// with protoc 3.21.12 on PATH.
package onnxpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go_opt=Monnx.proto=github.com/gcomp/gcomp/frontend/onnx/onnxpb onnx.proto
