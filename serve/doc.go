// Package serve is an HTTP inference server for any compiled model, on net/http over a
// gcomp.Session.
//
// Endpoints:
//
//	GET  /v1/model   the model's name, inputs, outputs and batch, as JSON
//	POST /v1/infer   one request of 1..batch rows: a JSON body
//	                 {"inputs": {"x": {"shape": [n, ...], "data": [...]}}}
//	                 or, for a model with one input, a NumPy .npy body
//	                 (Content-Type: application/x-npy); the reply is JSON
//	                 {"outputs": {"y": {"dtype": "f32", "shape": [n, ...], "data": [...]}}},
//	                 or the .npy of one output with Accept: application/x-npy
//	                 (?output=NAME when the model has several)
//	GET  /healthz    200 while the server takes requests
//
// A model's batch is the first dimension its inputs and outputs share. Requests carry any
// number of rows up to it. With dynamic batching (Config.Window > 0), as Triton Inference
// Server and TorchServe do it, the first request to arrive waits up to Window for others; the
// rows of those that came are run together, the remainder of the batch padded with zeros, and
// each request gets its own rows of the outputs back. Without it every request runs alone,
// padded. Either way runs go through the session's pool, so several batches are in flight at
// once.
//
// A model built over a symbolic batch (gcomp.Options.MaxBatch, or a dim every input and output
// leads with and no other axis uses) is not padded: its batch is the dim's bound, and each run
// carries exactly the rows that came (padded only up to the dim's lower end when fewer came), so
// a lone one-row request costs a one-row run. Stats.Padded counts the zero rows runs carried.
//
// Bad requests get one 4xx with a JSON {"error": "..."} naming the problem: 400 for a body
// that does not parse or a tensor of the wrong name, dtype or shape, 413 beyond
// Config.MaxBodyBytes (a Content-Length past it is refused before the body is read), 415 for
// another content type, 405 for another method. Shutdown (see Server.Close and
// http.Server.Shutdown) finishes the requests in flight.
//
// A request costs at most its model inputs' memory: a JSON body is read token by token, each
// number stored straight into the input's tensor, and the first number past the model's
// elements ends the request; an .npy body's header is checked against the model before its
// data is read. Server.HTTPServer sets the Config's read, write and idle timeouts
// (Default*Timeout when zero), so slow senders, slow readers and idle keep-alive connections
// are cut off.
package serve
