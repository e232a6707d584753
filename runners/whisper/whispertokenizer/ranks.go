package whispertokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// ErrBadRanks reports a malformed tiktoken ranks file.
var ErrBadRanks = errors.New("malformed tiktoken ranks file")

// Ranks is a tiktoken-format mergeable-ranks table: every byte string of the vocabulary and
// its rank, which is also its token id. Whisper requires the ranks to be dense (0..n-1) because
// the special tokens are numbered from n upwards.
type Ranks struct {
	enc map[string]int
	dec [][]byte
}

// LoadRanksFile reads a tiktoken ranks file (multilingual.tiktoken, gpt2.tiktoken).
func LoadRanksFile(path string) (*Ranks, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open ranks: %w", err)
	}
	defer f.Close()
	r, err := LoadRanks(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// LoadRanks parses tiktoken's format: one "base64(token) rank" pair per line; empty lines are
// ignored. The ranks must be exactly 0..n-1 with no duplicate token, and every single byte must
// be a token (byte-level BPE can then encode any input).
func LoadRanks(r io.Reader) (*Ranks, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	enc := make(map[string]int, 1<<16)
	var dec [][]byte
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		fields := bytes.Fields(b)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: line %d: want 2 fields, got %d", ErrBadRanks, line, len(fields))
		}
		tok, err := decodeBase64(fields[0])
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: token: %w", ErrBadRanks, line, err)
		}
		rank, err := strconv.Atoi(string(fields[1]))
		if err != nil || rank < 0 {
			return nil, fmt.Errorf("%w: line %d: rank %q", ErrBadRanks, line, fields[1])
		}
		if _, dup := enc[string(tok)]; dup {
			return nil, fmt.Errorf("%w: line %d: duplicate token %q", ErrBadRanks, line, tok)
		}
		if rank >= len(dec) {
			if rank > 1<<24 {
				return nil, fmt.Errorf("%w: line %d: rank %d too large", ErrBadRanks, line, rank)
			}
			dec = append(dec, make([][]byte, rank+1-len(dec))...)
		}
		if dec[rank] != nil {
			return nil, fmt.Errorf("%w: line %d: duplicate rank %d", ErrBadRanks, line, rank)
		}
		enc[string(tok)] = rank
		dec[rank] = tok
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read ranks: %w", err)
	}
	if len(dec) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadRanks)
	}
	for i, t := range dec {
		if t == nil {
			return nil, fmt.Errorf("%w: rank %d missing (ranks must be dense)", ErrBadRanks, i)
		}
	}
	for b := 0; b < 256; b++ {
		if _, ok := enc[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("%w: single byte 0x%02x is not a token", ErrBadRanks, b)
		}
	}
	return &Ranks{enc: enc, dec: dec}, nil
}

// Len is the number of mergeable tokens (the id of the first special token).
func (r *Ranks) Len() int { return len(r.dec) }

// decodeBase64 decodes standard base64. It also takes padding alone ("=") as the empty
// string, as Python's base64.b64decode does: multilingual.tiktoken has the line "= 50256".
func decodeBase64(s []byte) ([]byte, error) {
	if len(bytes.TrimRight(s, "=")) == 0 {
		return []byte{}, nil
	}
	tok := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(tok, s)
	if err != nil {
		return nil, err
	}
	return tok[:n], nil
}
