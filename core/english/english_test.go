package english

import "testing"

func TestCountAndArticle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ desc, got, want string }{
		{"zero is plural", Count(0, "link"), "0 links"},
		{"one is singular", Count(1, "channel"), "1 channel"},
		{"many", Count(12, "model"), "12 models"},
		{"irregular plural", Count(2, "match", "matches"), "2 matches"},
		{"irregular singular", Count(1, "match", "matches"), "1 match"},
		{"vowel", A("image model"), "an image model"},
		{"consonant", A("chat model"), "a chat model"},
		{"empty", A(""), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.desc, tc.got, tc.want)
		}
	}
}
