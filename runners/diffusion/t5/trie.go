package t5

import (
	"sort"
)

// trie is an immutable byte trie from strings to int32 values (vocabulary ids), stored as flat
// arrays: each node's children are a contiguous, label-sorted run of edges.
type trie struct {
	nodes []trieNode
	label []byte
	child []int32
	root  [256]int32 // children of the root by byte, -1 when absent
}

type trieNode struct {
	first, count int32 // edges [first, first+count)
	value        int32 // -1 when no key ends here
}

type trieKey struct {
	key   string
	value int32
}

// newTrie builds a trie from keys; on duplicate keys the first value is kept.
func newTrie(keys []trieKey) *trie {
	sorted := make([]trieKey, len(keys))
	copy(sorted, keys)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].key < sorted[j].key })
	t := &trie{}
	t.nodes = append(t.nodes, trieNode{value: -1})
	t.build(0, sorted, 0)
	for i := range t.root {
		t.root[i] = -1
	}
	n := t.nodes[0]
	for e := n.first; e < n.first+n.count; e++ {
		t.root[t.label[e]] = t.child[e]
	}
	return t
}

// build fills node from keys, all of which share their first depth bytes.
func (t *trie) build(node int32, keys []trieKey, depth int) {
	i := 0
	if i < len(keys) && len(keys[i].key) == depth {
		t.nodes[node].value = keys[i].value
		for i < len(keys) && len(keys[i].key) == depth {
			i++
		}
	}
	type group struct {
		label    byte
		from, to int
	}
	var groups []group
	for i < len(keys) {
		b := keys[i].key[depth]
		j := i + 1
		for j < len(keys) && keys[j].key[depth] == b {
			j++
		}
		groups = append(groups, group{b, i, j})
		i = j
	}
	if len(groups) == 0 {
		return
	}
	first := int32(len(t.label))
	t.nodes[node].first, t.nodes[node].count = first, int32(len(groups))
	for _, g := range groups {
		t.label = append(t.label, g.label)
		t.child = append(t.child, int32(len(t.nodes)))
		t.nodes = append(t.nodes, trieNode{value: -1})
	}
	for k, g := range groups {
		t.build(t.child[first+int32(k)], keys[g.from:g.to], depth+1)
	}
}

// step follows the edge labelled b from node, returning -1 when there is none.
func (t *trie) step(node int32, b byte) int32 {
	if node == 0 {
		return t.root[b]
	}
	n := &t.nodes[node]
	lo, hi := n.first, n.first+n.count
	for lo < hi {
		mid := int32(uint32(lo+hi) >> 1)
		switch l := t.label[mid]; {
		case l == b:
			return t.child[mid]
		case l < b:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// longestPrefix returns the value and length of the longest key that is a prefix of s, or
// (-1, 0).
func (t *trie) longestPrefix(s string) (value int32, n int) {
	value, node := int32(-1), int32(0)
	for i := 0; i < len(s); i++ {
		if node = t.step(node, s[i]); node < 0 {
			break
		}
		if v := t.nodes[node].value; v >= 0 {
			value, n = v, i+1
		}
	}
	return value, n
}

// lookup returns the value of key, or -1.
func (t *trie) lookup(key string) int32 {
	node := int32(0)
	for i := 0; i < len(key); i++ {
		if node = t.step(node, key[i]); node < 0 {
			return -1
		}
	}
	return t.nodes[node].value
}
