package vector

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode"
)

// DefaultHashDimensions is the width of HashEmbedder's vectors when none is given.
const DefaultHashDimensions = 256

// HashEmbedder is the local embedding used when no embeddings endpoint is configured: the
// character 1-, 2- and 3-grams of the lowercased text (whitespace and punctuation folded to
// one space, so it works for Chinese without word segmentation and for English), each
// hashed into one of Dim buckets with a hashed sign, then L2-normalised. Texts sharing many
// n-grams get similar vectors; there is no semantics beyond spelling.
type HashEmbedder struct {
	Dim int
}

// NewHashEmbedder returns a hashed n-gram embedder of dim buckets (DefaultHashDimensions
// when dim <= 0).
func NewHashEmbedder(dim int) *HashEmbedder {
	if dim <= 0 {
		dim = DefaultHashDimensions
	}
	return &HashEmbedder{Dim: dim}
}

// ID implements Embedder.
func (h *HashEmbedder) ID() string { return fmt.Sprintf("hash-ngram-%d", h.Dim) }

// Embed implements Embedder.
func (h *HashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.Vector(t)
	}
	return out, nil
}

// gram weights: longer grams say more about the text than single characters.
var gramWeight = [4]float32{0, 0.5, 1, 1.5}

// Vector embeds one text.
func (h *HashEmbedder) Vector(text string) []float32 {
	v := make([]float32, h.Dim)
	runes := fold(text)
	for n := 1; n <= 3; n++ {
		for i := 0; i+n <= len(runes); i++ {
			g := runes[i : i+n]
			if n == 1 && g[0] == ' ' {
				continue
			}
			if n > 1 && (g[0] == ' ' && g[n-1] == ' ') {
				continue
			}
			hs := fnv.New32a()
			hs.Write([]byte(string(g)))
			sum := hs.Sum32()
			idx := int(sum % uint32(h.Dim))
			w := gramWeight[n]
			if sum&0x80000000 != 0 {
				w = -w
			}
			v[idx] += w
		}
	}
	return Normalize(v)
}

// fold lowercases text and folds runs of whitespace, punctuation and symbols (and '_') into
// one space, trimmed; full-width ASCII becomes ASCII.
func fold(text string) []rune {
	var b strings.Builder
	space := true
	for _, r := range strings.ToLower(text) {
		if r >= 0xFF01 && r <= 0xFF5E { // full-width ASCII variants
			r -= 0xFEE0
			r = unicode.ToLower(r)
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
			continue
		}
		if !space {
			b.WriteRune(' ')
			space = true
		}
	}
	return []rune(strings.TrimSpace(b.String()))
}
