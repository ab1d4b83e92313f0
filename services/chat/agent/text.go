// Text helpers shared by the agents: folding of questions and period phrases, the language
// of an answer.

package agent

import (
	"regexp"
	"strings"
	"unicode"
)

// FoldText lowercases and turns full-width ASCII into ASCII.
func FoldText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 0xFF01 && r <= 0xFF5E {
			r -= 0xFEE0
		}
		if r == '\u3000' {
			r = ' '
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

var spaceRun = regexp.MustCompile(`\s+`)

// NormalizeText is FoldText with every run of white space made one space: the form the
// question parser and period.Parse read.
func NormalizeText(s string) string { return spaceRun.ReplaceAllString(FoldText(s), " ") }

// HasHan reports whether s holds Chinese characters (an answer in Chinese follows).
func HasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// Tr picks the Chinese or the English text.
func Tr(zh bool, en, cn string) string {
	if zh {
		return cn
	}
	return en
}
