package t5

// sentencepiece model types (ModelProto.TrainerSpec.model_type).
const (
	modelUnigram = 1
	modelChar    = 4
)

// charModel is sentencepiece's CHAR model (char_model.cc): the normalized text is cut into
// user-defined symbols (longest first) and single UTF-8 characters, each looked up as a piece
// (PieceToId); a run of characters that are no piece is one unknown id (SentencePieceProcessor
// merges consecutive unknowns, as spm_encode shows).
type charModel struct {
	ids  map[string]int32
	user *trie // user-defined symbols; nil without any
	unk  int32
}

func newCharModel(pieces []piece, userKeys []trieKey, unk int32) *charModel {
	c := &charModel{ids: make(map[string]int32, len(pieces)), unk: unk}
	for i, p := range pieces {
		c.ids[p.text] = int32(i)
	}
	if len(userKeys) > 0 {
		c.user = newTrie(userKeys)
	}
	return c
}

func (c *charModel) appendIDs(dst []int, s string) []int {
	start := len(dst)
	for len(s) > 0 {
		n := 0
		if c.user != nil {
			_, n = c.user.longestPrefix(s)
		}
		if n == 0 {
			n = min(oneCharLen(s[0]), len(s))
		}
		id, ok := c.ids[s[:n]]
		if !ok {
			id = c.unk
		}
		if !(id == c.unk && len(dst) > start && dst[len(dst)-1] == int(c.unk)) {
			dst = append(dst, int(id))
		}
		s = s[n:]
	}
	return dst
}
