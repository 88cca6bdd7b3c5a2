package tokenizer

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// SentencePiece's tokenizer.model is a protocol buffer (sentencepiece_model.proto's ModelProto).
// It is read with protowire, field by field: the few fields that decide ids are below, and the
// rest (training options, self-test data) are skipped.

// Field numbers of sentencepiece_model.proto.
const (
	fieldPieces         = 1 // ModelProto.pieces
	fieldTrainerSpec    = 2
	fieldNormalizerSpec = 3

	fieldPiece = 1 // SentencePiece.piece
	fieldScore = 2
	fieldType  = 3

	fieldModelType              = 3 // TrainerSpec
	fieldTreatWhitespaceAsSuffx = 24
	fieldByteFallback           = 35
	fieldUnkID                  = 40
	fieldBosID                  = 41
	fieldEosID                  = 42
	fieldPadID                  = 43

	fieldNormName       = 1 // NormalizerSpec
	fieldCharsmap       = 2
	fieldAddDummyPrefix = 3
	fieldRemoveExtraWS  = 4
	fieldEscapeWS       = 5
)

// Piece types.
const (
	pieceNormal      = 1
	pieceUnknown     = 2
	pieceControl     = 3
	pieceUserDefined = 4
	pieceUnused      = 5
	pieceByte        = 6
)

type spPiece struct {
	piece string
	score float32
	typ   int
}

type spModel struct {
	pieces                       []spPiece
	modelType                    int
	byteFallback, wsSuffix       bool
	unk, bos, eos, pad           int
	normName                     string
	charsmap                     bool
	dummyPrefix, removeWS, escWS bool
}

// fields calls f for each field of a message; f returns how much of b the value took (protowire's
// Consume functions), or a negative number for a malformed value.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, b []byte) int) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		m := f(num, typ, b)
		if m == 0 {
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		if m < 0 {
			return fmt.Errorf("field %d: %v", num, protowire.ParseError(m))
		}
		b = b[m:]
	}
	return nil
}

// varint reads a varint field into *v when the wire type is right (else leaves it to be skipped).
func varint(typ protowire.Type, b []byte, v *int) int {
	if typ != protowire.VarintType {
		return 0
	}
	x, n := protowire.ConsumeVarint(b)
	*v = int(int32(x))
	return n
}

// flag reads a bool field.
func flag(typ protowire.Type, b []byte, v *bool) int {
	var x int
	n := varint(typ, b, &x)
	if n > 0 {
		*v = x != 0
	}
	return n
}

func bytesField(typ protowire.Type, b []byte, v *[]byte) int {
	if typ != protowire.BytesType {
		return 0
	}
	x, n := protowire.ConsumeBytes(b)
	*v = x
	return n
}

// message reads a sub-message field, calling f on each of its fields.
func message(typ protowire.Type, b []byte, f func(num protowire.Number, typ protowire.Type, b []byte) int) int {
	var sub []byte
	n := bytesField(typ, b, &sub)
	if n > 0 && fields(sub, f) != nil {
		return -1
	}
	return n
}

func decodeSPModel(data []byte) (*spModel, error) {
	sp := &spModel{modelType: 1, unk: 0, bos: 1, eos: 2, pad: -1, dummyPrefix: true, removeWS: true, escWS: true}
	ints := map[protowire.Number]*int{fieldModelType: &sp.modelType, fieldUnkID: &sp.unk, fieldBosID: &sp.bos, fieldEosID: &sp.eos, fieldPadID: &sp.pad}
	trainerFlags := map[protowire.Number]*bool{fieldTreatWhitespaceAsSuffx: &sp.wsSuffix, fieldByteFallback: &sp.byteFallback}
	normFlags := map[protowire.Number]*bool{fieldAddDummyPrefix: &sp.dummyPrefix, fieldRemoveExtraWS: &sp.removeWS, fieldEscapeWS: &sp.escWS}
	err := fields(data, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case fieldPieces:
			p := spPiece{typ: pieceNormal}
			n := message(typ, b, func(num protowire.Number, typ protowire.Type, b []byte) int {
				switch {
				case num == fieldPiece:
					var s []byte
					n := bytesField(typ, b, &s)
					p.piece = string(s)
					return n
				case num == fieldScore && typ == protowire.Fixed32Type:
					x, n := protowire.ConsumeFixed32(b)
					p.score = math.Float32frombits(x)
					return n
				case num == fieldType:
					return varint(typ, b, &p.typ)
				}
				return 0
			})
			if n > 0 {
				sp.pieces = append(sp.pieces, p)
			}
			return n
		case fieldTrainerSpec:
			return message(typ, b, func(num protowire.Number, typ protowire.Type, b []byte) int {
				if v, ok := ints[num]; ok {
					return varint(typ, b, v)
				}
				if v, ok := trainerFlags[num]; ok {
					return flag(typ, b, v)
				}
				return 0
			})
		case fieldNormalizerSpec:
			return message(typ, b, func(num protowire.Number, typ protowire.Type, b []byte) int {
				var s []byte
				switch num {
				case fieldNormName:
					n := bytesField(typ, b, &s)
					sp.normName = string(s)
					return n
				case fieldCharsmap:
					n := bytesField(typ, b, &s)
					sp.charsmap = len(s) > 0
					return n
				}
				if v, ok := normFlags[num]; ok {
					return flag(typ, b, v)
				}
				return 0
			})
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	return sp, nil
}

// parseSPModel reads a SentencePiece tokenizer.model: a BPE model (Llama 2's and Mistral's, with
// byte fallback) or a unigram model, with the identity normalizer.
func parseSPModel(file string, data []byte) (*Tokenizer, error) {
	sp, err := decodeSPModel(data)
	if err != nil {
		return nil, errorf(file, "", "not a SentencePiece model (malformed protocol buffer: %v)", err)
	}
	if len(sp.pieces) == 0 {
		return nil, errorf(file, "pieces", "empty: not a SentencePiece model")
	}
	if len(sp.pieces) >= maxVocab {
		return nil, errorf(file, "pieces", "%d pieces, more than %d", len(sp.pieces), maxVocab)
	}
	t := &Tokenizer{bos: -1}
	m := &t.m
	switch sp.modelType {
	case 1:
		m.algo, t.kind = unigram, "SentencePiece unigram (tokenizer.model)"
	case 2:
		m.algo, t.kind = bpeScores, "SentencePiece BPE (tokenizer.model)"
	default:
		names := map[int]string{3: "WORD", 4: "CHAR"}
		return nil, errorf(file, "trainer_spec.model_type", "%d (%s) is not supported (BPE or UNIGRAM)", sp.modelType, names[sp.modelType])
	}
	if sp.wsSuffix {
		return nil, errorf(file, "trainer_spec.treat_whitespace_as_suffix", "true is not supported")
	}
	if sp.charsmap {
		return nil, errorf(file, "normalizer_spec", "the normalization rule %q is not supported (identity only)", sp.normName)
	}
	if !sp.escWS {
		return nil, errorf(file, "normalizer_spec.escape_whitespaces", "false is not supported")
	}
	n := len(sp.pieces)
	m.pieces = make([]string, n)
	m.present = make([]bool, n)
	m.scores = make([]float32, n)
	m.vocab = make(map[string]int, n)
	m.unk = -1
	m.metaspace, m.collapseWS, m.fuseUnk = true, sp.removeWS, true
	if sp.dummyPrefix {
		m.prefix, m.stripDecoded = prefixStart, true
	}
	var bytesSeen [256]bool
	for id, p := range sp.pieces {
		where := fmt.Sprintf("pieces[%d]", id)
		if p.piece == "" {
			return nil, errorf(file, where+".piece", "empty")
		}
		m.pieces[id], m.present[id], m.scores[id] = p.piece, true, p.score
		switch p.typ {
		case pieceNormal, pieceUserDefined:
			if _, dup := m.vocab[p.piece]; dup {
				return nil, errorf(file, where+".piece", "%q appears twice", p.piece)
			}
			m.vocab[p.piece] = id
			m.maxLen = max(m.maxLen, len(p.piece))
			if p.typ == pieceUserDefined {
				t.added = append(t.added, addedToken{content: p.piece, id: id})
			}
		case pieceUnknown:
			if m.unk >= 0 {
				return nil, errorf(file, where+".type", "a second unknown piece (the first is %d)", m.unk)
			}
			m.unk = id
		case pieceControl:
			t.added = append(t.added, addedToken{content: p.piece, id: id, special: true})
		case pieceByte:
			b, ok := byteToken(p.piece)
			if !ok {
				return nil, errorf(file, where+".piece", "%q is a byte piece but not <0xXX>", p.piece)
			}
			m.byteIDs[b] = id
			bytesSeen[b] = true
		case pieceUnused:
		default:
			return nil, errorf(file, where+".type", "%d is not a piece type", p.typ)
		}
	}
	if m.unk < 0 {
		return nil, errorf(file, "pieces", "no unknown piece")
	}
	if sp.byteFallback {
		for b, ok := range bytesSeen {
			if !ok {
				return nil, errorf(file, "trainer_spec.byte_fallback", "byte fallback needs the byte piece <0x%02X>, which the model lacks", b)
			}
		}
		m.byteFallback = true
	}
	for _, s := range []struct {
		name string
		id   int
		set  func(int)
	}{
		{"bos_id", sp.bos, func(id int) { t.bos = id }},
		{"eos_id", sp.eos, func(id int) { t.eos = []int{id} }},
	} {
		if s.id < 0 {
			continue
		}
		if s.id >= n {
			return nil, errorf(file, "trainer_spec."+s.name, "%d is outside the %d pieces", s.id, n)
		}
		s.set(s.id)
	}
	// The unknown piece decodes as nothing, as in Hugging Face's conversion of these models
	// (where it is a special token); SentencePiece itself writes " ⁇ ".
	t.added = append(t.added, addedToken{content: m.pieces[m.unk], id: m.unk, special: true})
	t.addBOS = t.bos >= 0 // Llama's convention; tokenizer_config.json's add_bos_token overrides it
	m.setUnkScore()
	t.finish()
	return t, nil
}
