// Package lmserve serves a language model (package lm) to many clients at once with continuous
// batching, behind an OpenAI-compatible HTTP API.
//
// A [Scheduler] owns one engine of B sequence slots, each a row of the KV cache with its own
// position. Over a packed engine (lm.EngineOptions.Packed; Open opens one for B > 1) the running
// sequences fill slots [0, n), the last one moving into a slot freed below it (its cache rows
// copied on the device), and every step runs the decode program once for those n rows; over an
// engine that is not packed it runs all B rows. A request waits in a
// first-come queue until a slot is free; it then joins the running batch at the next step, its
// prompt fed one token per step (a prefill chunked into the decode step), and generates one token
// per step until a stop id, its max_tokens, the context's end or its cancellation; its slot is
// reused at the following step. Each row attends only to its own positions, so what a sequence
// generates does not depend on its neighbours: greedy decoding in the batch equals greedy
// decoding alone, token for token.
//
// [Server] puts the scheduler behind HTTP:
//
//	POST /v1/completions        prompt (text or token ids) → text, or server-sent events with stream
//	POST /v1/chat/completions   messages, rendered by the model's chat template (tokenizer_config.json)
//	GET  /v1/models             the one model served
//	GET  /healthz               200 while serving, 503 while draining
//	GET  /metrics               queue length, running sequences, tokens/s, time to first token
//
// Errors use OpenAI's shape, {"error": {"message", "type", "param", "code"}}, with a 4xx status
// for a bad request. Shutdown drains: no request is admitted, running ones finish.
package lmserve
