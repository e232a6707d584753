package textnorm

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// English number words of num2words' Num2Word_EN (lang_EN.py over lang_EU.py and base.py).
var (
	lowWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
		"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
		"nineteen", "twenty"}
	midWords = []struct {
		n    int64
		word string
	}{{1000, "thousand"}, {100, "hundred"}, {90, "ninety"}, {80, "eighty"}, {70, "seventy"},
		{60, "sixty"}, {50, "fifty"}, {40, "forty"}, {30, "thirty"}}
	ordWords = map[string]string{"one": "first", "two": "second", "three": "third", "four": "fourth",
		"five": "fifth", "six": "sixth", "seven": "seventh", "eight": "eighth", "nine": "ninth",
		"twelve": "twelfth"}
)

// card is one entry of num2words' cards table: a value and its word.
type card struct {
	n    *big.Int
	word string
}

// cards is num2words' English cards table, largest first: the -illions from centillion
// (10^303) down to million (10^6), then thousand ... thirty, then twenty ... zero.
var cards, maxVal = buildCards()

func buildCards() ([]card, *big.Int) {
	units := []string{"", "un", "duo", "tre", "quattuor", "quin", "sex", "sept", "octo", "novem"}
	tens := []string{"dec", "vigint", "trigint", "quadragint", "quinquagint", "sexagint", "septuagint", "octogint", "nonagint"}
	lows := []string{"non", "oct", "sept", "sext", "quint", "quadr", "tr", "b", "m"}
	var gen []string
	for _, t := range tens {
		for _, u := range units {
			gen = append(gen, u+t)
		}
	}
	for i, j := 0, len(gen)-1; i < j; i, j = i+1, j-1 {
		gen[i], gen[j] = gen[j], gen[i]
	}
	high := append(append([]string{"cent"}, gen...), lows...)
	var out []card
	top := 3 + 3*len(high)
	for i, w := range high {
		n := top - 3*i
		if n <= 3 {
			break
		}
		out = append(out, card{new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil), w + "illion"})
	}
	for _, m := range midWords {
		out = append(out, card{big.NewInt(m.n), m.word})
	}
	for i := len(lowWords) - 1; i >= 0; i-- {
		out = append(out, card{big.NewInt(int64(i)), lowWords[i]})
	}
	return out, new(big.Int).Mul(big.NewInt(1000), out[0].n)
}

// ErrTooBig is a number num2words refuses (OverflowError): 1000 centillion or more.
var ErrTooBig = fmt.Errorf("number too big for words (at most %d digits)", 306)

// node is num2words' splitnum output: a leaf (text, value) or a list of nodes.
type node struct {
	leaf bool
	text string
	n    *big.Int
	kids []node
}

func splitnum(v *big.Int) []node {
	for _, c := range cards {
		if c.n.Cmp(v) > 0 {
			continue
		}
		var out []node
		div, mod := new(big.Int), new(big.Int)
		if v.Sign() == 0 {
			div.SetInt64(1)
		} else {
			div.DivMod(v, c.n, mod)
		}
		if div.Cmp(big.NewInt(1)) == 0 {
			out = append(out, node{leaf: true, text: "one", n: big.NewInt(1)})
		} else {
			out = append(out, node{kids: splitnum(div)})
		}
		out = append(out, node{leaf: true, text: c.word, n: c.n})
		if mod.Sign() != 0 {
			out = append(out, node{kids: splitnum(mod)})
		}
		return out
	}
	return nil
}

// merge is Num2Word_EN.merge.
func merge(l, r node) node {
	hundred := big.NewInt(100)
	one := big.NewInt(1)
	switch {
	case l.n.Cmp(one) == 0 && r.n.Cmp(hundred) < 0:
		return node{leaf: true, text: r.text, n: r.n}
	case hundred.Cmp(l.n) > 0 && l.n.Cmp(r.n) > 0:
		return node{leaf: true, text: l.text + "-" + r.text, n: new(big.Int).Add(l.n, r.n)}
	case l.n.Cmp(hundred) >= 0 && hundred.Cmp(r.n) > 0:
		return node{leaf: true, text: l.text + " and " + r.text, n: new(big.Int).Add(l.n, r.n)}
	case r.n.Cmp(l.n) > 0:
		return node{leaf: true, text: l.text + " " + r.text, n: new(big.Int).Mul(l.n, r.n)}
	}
	return node{leaf: true, text: l.text + ", " + r.text, n: new(big.Int).Add(l.n, r.n)}
}

// clean is Num2Word_Base.clean: it folds splitnum's nested lists pairwise into one leaf.
func clean(val []node) node {
	out := val
	for len(val) != 1 {
		out = nil
		left, right := val[0], val[1]
		if left.leaf && right.leaf {
			out = append(out, merge(left, right))
			if len(val) > 2 {
				out = append(out, node{kids: val[2:]})
			}
		} else {
			for _, e := range val {
				if !e.leaf {
					if len(e.kids) == 1 {
						out = append(out, e.kids[0])
					} else {
						out = append(out, clean(e.kids))
					}
				} else {
					out = append(out, e)
				}
			}
		}
		val = out
	}
	return out[0]
}

// Cardinal is num2words(n) for a non-negative integer: "one hundred and twenty-two".
func Cardinal(n *big.Int) (string, error) {
	if n.Sign() < 0 {
		w, err := Cardinal(new(big.Int).Neg(n))
		return "minus " + w, err
	}
	if n.Cmp(maxVal) >= 0 {
		return "", ErrTooBig
	}
	return clean(splitnum(n)).text, nil
}

// CardinalInt is Cardinal of a small integer.
func CardinalInt(n int64) string {
	w, _ := Cardinal(big.NewInt(n))
	return w
}

// Ordinal is num2words(n, to="ordinal"): "twenty-third".
func Ordinal(n *big.Int) (string, error) {
	card, err := Cardinal(n)
	if err != nil {
		return "", err
	}
	words := strings.Split(card, " ")
	last := strings.Split(words[len(words)-1], "-")
	w := strings.ToLower(last[len(last)-1])
	if o, ok := ordWords[w]; ok {
		w = o
	} else {
		if strings.HasSuffix(w, "y") {
			w = w[:len(w)-1] + "ie"
		}
		w += "th"
	}
	last[len(last)-1] = w
	words[len(words)-1] = strings.Join(last, "-")
	return strings.Join(words, " "), nil
}

// pow10 is float(10**p) as Python computes it: correctly rounded.
func pow10(p int) float64 {
	f, _ := strconv.ParseFloat("1e"+strconv.Itoa(p), 64)
	return f
}

// Float is num2words(v) for a float (Num2Word_Base.to_cardinal and to_cardinal_float): an
// integral value reads as its integer; otherwise the integer part, "point", and one word per
// decimal of Python's repr of v ("one hundred and thirty-three point nine").
func Float(v float64) (string, error) {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "", fmt.Errorf("%v has no words", v)
	}
	if v == math.Trunc(v) {
		bf := new(big.Float).SetFloat64(v)
		n, _ := bf.Int(nil)
		return Cardinal(n)
	}
	// Decimal(repr(v)).as_tuple().exponent: repr's digits and exponent.
	e := strconv.FormatFloat(v, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1)
	prec := exp - (len(digits) - 1)
	if prec < 0 {
		prec = -prec
	}
	pre := math.Trunc(v)
	scale := pow10(prec)
	if math.IsInf(scale, 0) {
		return "", fmt.Errorf("%v has too many decimals for words", v)
	}
	post := math.Abs(v-pre) * scale
	var postInt *big.Int
	if math.Abs(math.RoundToEven(post)-post) < 0.01 {
		postInt, _ = new(big.Float).SetFloat64(math.RoundToEven(post)).Int(nil)
	} else {
		postInt, _ = new(big.Float).SetFloat64(math.Floor(post)).Int(nil)
	}
	ps := postInt.String()
	if len(ps) < prec {
		ps = strings.Repeat("0", prec-len(ps)) + ps
	}
	preInt, _ := new(big.Float).SetFloat64(pre).Int(nil)
	head, err := Cardinal(preInt)
	if err != nil {
		return "", err
	}
	out := []string{head}
	if prec > 0 {
		out = append(out, "point")
	}
	for i := range prec {
		out = append(out, lowWords[ps[i]-'0'])
	}
	return strings.Join(out, " "), nil
}
