package tokenizer

// GPT-2's byte-level alphabet: every byte is one printable rune, so a vocabulary of strings can
// hold any byte sequence. Printable Latin-1 bytes stand for themselves; the others (controls,
// space, 0x7F-0xA0, 0xAD) map to U+0100 upward in byte order, as in GPT-2's bytes_to_unicode.
var byteToRune, runeToByte = byteTables()

func byteTables() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = rune(256 + n)
			n++
		}
		b2r[b] = r
		r2b[r] = byte(b)
	}
	return b2r, r2b
}

// byteLevelString maps text's bytes to the byte-level alphabet.
func byteLevelString(text string) string {
	out := make([]rune, len(text))
	for i := 0; i < len(text); i++ {
		out[i] = byteToRune[text[i]]
	}
	return string(out)
}

// byteLevelBytes maps a byte-level piece back to bytes; a rune outside the alphabet (an added
// token's own text) stands for its UTF-8 encoding.
func byteLevelBytes(piece string) []byte {
	out := make([]byte, 0, len(piece))
	for _, r := range piece {
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = append(out, string(r)...)
		}
	}
	return out
}
