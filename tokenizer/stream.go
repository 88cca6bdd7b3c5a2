package tokenizer

import "unicode/utf8"

// StreamDecoder turns ids into text one id at a time, for printing tokens as they are
// generated. A byte-level or byte-fallback token may hold part of a character; the decoder holds
// such bytes back until the character is complete, so every chunk is valid UTF-8 and the chunks
// together equal Decode of all the ids.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte // the start of a character not yet complete
	started bool   // some text has been written (the dummy-prefix space is stripped once)
}

// NewStreamDecoder returns a decoder at the start of a text. To continue after a prompt, pass
// the prompt's ids to Next first and drop what it returns.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Next returns the text that id completes: possibly empty (a special token, or part of a
// character), possibly several characters. An id outside the vocabulary is an error.
func (d *StreamDecoder) Next(id int) (string, error) {
	if err := d.t.check(id); err != nil {
		return "", err
	}
	if d.t.special[id] {
		return "", nil
	}
	b := append(d.pending, d.t.text[id]...)
	if !d.started && len(b) > 0 {
		d.started = true
		if d.t.m.stripDecoded && b[0] == ' ' {
			b = b[1:]
		}
	}
	// Everything up to the last character that may still be completing is written.
	n := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				n = i
			}
			break
		}
	}
	out := validUTF8(b[:n])
	d.pending = append([]byte(nil), b[n:]...)
	return out, nil
}

// Flush returns what is held back at the end of the text: an incomplete character's bytes, as
// U+FFFD (as Decode writes them).
func (d *StreamDecoder) Flush() string {
	out := validUTF8(d.pending)
	d.pending = nil
	return out
}
