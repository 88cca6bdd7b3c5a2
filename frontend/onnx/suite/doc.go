// Package suite holds ONNX's backend node test suite run against gcomp: every case under
// libonnx-testdata's data/node folder (a model.onnx with test_data_set_0/input_N.pb and
// output_N.pb) is imported, run on the reference interpreter and, compiled, on the PTX
// simulator, and compared with the expected outputs at ONNX's backend-test tolerances (rtol
// 1e-3, atol 1e-7). testdata/status.txt records every case's outcome; the test fails when a
// case's outcome changes. TestExported checks models PyTorch exported (scripts/export_onnx.py,
// testdata/exported) against PyTorch's own outputs. The package has no code of its own.
package suite
