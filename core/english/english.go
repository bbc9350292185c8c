// Package english words the counts and articles of messages people read:
// "1 channel", "2 channels", "an image model".
package english

import (
	"strconv"
	"strings"
)

// Count is n and the noun, singular for exactly one: Count(1, "link") is
// "1 link", Count(3, "link") "3 links". A noun whose plural is not its
// singular plus "s" is given both: Count(n, "match", "matches").
func Count(n int, singular string, plural ...string) string {
	return strconv.Itoa(n) + " " + Noun(n, singular, plural...)
}

// Noun is the noun for n things, without the number.
func Noun(n int, singular string, plural ...string) string {
	if n == 1 {
		return singular
	}
	if len(plural) > 0 {
		return plural[0]
	}
	return singular + "s"
}

// A is the phrase with its indefinite article: A("image model") is "an
// image model", A("chat model") "a chat model". It goes by the first
// letter, which serves the words messages use.
func A(phrase string) string {
	if phrase == "" {
		return ""
	}
	if strings.ContainsRune("aeiouAEIOU", rune(phrase[0])) {
		return "an " + phrase
	}
	return "a " + phrase
}
