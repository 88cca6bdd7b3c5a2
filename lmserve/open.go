package lmserve

import (
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/lm"
)

// OpenOptions say how Open serves a model folder.
type OpenOptions struct {
	Engine lm.EngineOptions // Batch is the number of slots; Open packs them (Packed) when there are several
	Name   string           // the model's id in the API; the folder's name if ""
	// MaxQueue bounds the requests waiting for a slot (Options.MaxQueue).
	MaxQueue     int
	MaxBodyBytes int64
}

// Open serves a loaded model folder: it opens an engine of opts.Engine.Batch slots (packed, with
// a decode program over a symbolic batch, when there are several), starts a scheduler over it and reads the chat template of the folder's tokenizer_config.json.
func Open(f *lm.Folder, opts OpenOptions) (*Server, error) {
	name := opts.Name
	if name == "" {
		name = filepath.Base(f.Dir)
	}
	chat, err := LoadChatTemplate(f.Dir)
	if err != nil {
		return nil, err
	}
	eopts := opts.Engine
	// The running sequences fill a prefix of the slots and a step decodes only them.
	eopts.Packed = eopts.Batch > 1
	e, err := f.Model.Open(eopts)
	if err != nil {
		return nil, err
	}
	s, err := New(e, Options{MaxSeq: f.Model.MaxSeq(), MaxQueue: opts.MaxQueue})
	if err != nil {
		e.Close()
		return nil, err
	}
	v, err := NewServer(s, Config{Name: name, Tokenizer: f.Tokenizer, StopIDs: f.StopIDs(), Chat: chat, MaxBodyBytes: opts.MaxBodyBytes})
	if err != nil {
		s.Close()
		e.Close()
		return nil, err
	}
	v.closeEngine = e.Close
	return v, nil
}

// Close stops the scheduler (sequences still running end cancelled) and frees the engine.
func (v *Server) Close() error {
	v.draining.Store(true)
	v.s.Close()
	if v.closeEngine != nil {
		return v.closeEngine()
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
