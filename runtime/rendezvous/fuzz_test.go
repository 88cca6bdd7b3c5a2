package rendezvous

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"testing"
)

// FuzzHello: whatever a peer sends as its hello, node 0's reading and
// checking of it never panics, and what it accepts is a node it expects.
func FuzzHello(f *testing.F) {
	f.Add([]byte(`{"magic":"gcomp-rendezvous-1","node_rank":1,"nnodes":3,"local_devices":2,"model_hash":"m","batch":8}`))
	f.Add([]byte(`{"magic":"gcomp-rendezvous-1","node_rank":-1,"nnodes":3}`))
	f.Add([]byte(`{"magic":"gcomp-rendezvous-1","node_rank":9e99}`))
	f.Add([]byte(`{"magic":"gcomp-rendezvous-1","node_rank":1,"nnodes":3,"local_devices":2,"model_hash":"m","batch":8,"settings":[{"name":"--lr","value":"0.1"}]}`))
	self := hello{Magic: magic, NNodes: 3, LocalDevices: 1, ModelHash: "m", Batch: 8}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h hello
		if err := json.NewDecoder(io.LimitReader(bytes.NewReader(b), maxMessage)).Decode(&h); err != nil || h.Magic != magic {
			return
		}
		peers := make([]*peer, self.NNodes)
		if agree(self, h, addr, peers) == nil {
			if h.NodeRank < 1 || h.NodeRank >= self.NNodes || h.LocalDevices < 1 || h.ModelHash != "m" || h.Batch != 8 || len(h.Settings) != 0 {
				t.Fatalf("accepted %+v", h)
			}
		}
	})
}
