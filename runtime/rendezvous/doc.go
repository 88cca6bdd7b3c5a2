// Package rendezvous lets the nodes of a multi-node run find each other
// before training, as torchrun's --rdzv-endpoint does: node 0 listens on
// HOST:PORT, every other node connects and says who it is (its node rank,
// how many devices it drives, the model's hash, the batch, the rest of the
// training's configuration as named settings, how many nodes it expects), and
// node 0 answers every node with the world: each node's device count, the
// world size, the node's first global rank and node 0's payload —
// the NCCL unique id, or the simulated collective's address.
//
// Every check is made once, by node 0, and its verdict reaches every node, so
// a mismatch (a different model, batch, setting or node count, a node rank used
// twice) is the same clear error everywhere; differing settings are named.
// Node 0 reads every connection's hello concurrently, each within its own
// handshake deadline, so a connection that says nothing (a port scanner, half a
// hello) delays no node and is never blamed on one. At most MaxNodes nodes.
// Everything is bounded by the timeout: a node that never comes is named by
// node 0 and the others; a node that dies after joining (before the closing
// barrier) is named too; a node that cannot reach node 0 says where it tried.
//
//	w, err := rendezvous.Join(rendezvous.Config{
//		Addr: "10.0.0.1:29500", NNodes: 2, NodeRank: r, LocalDevices: 8,
//		ModelHash: hash, Batch: 256, Payload: id[:], // Payload on node 0 only
//	})
//	// w.Size == 16, w.FirstRank == 8*r, w.Payload == node 0's id
package rendezvous
