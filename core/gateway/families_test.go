package gateway

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/tollgate-gw/tollgate/core/config"
)

// simChannel serves chat and every family of the sim, in process.
const simChannel = "channel \"s\" {\n  vendor    = \"sim\"\n  transport = \"in-process\"\n  protocols = [\"openai_chat\"]\n}\n"

const allFamilies = "chat, image, video, music, speech, voice, transcript, search, avatar, lipsync, motion, clip, subtitle"

// A family's problems are told by file and line as `config check` and
// serve tell every other, though only the plugins know the families (their
// names, the units they bill): a file that loads is checked at provision,
// one that does not gets them added to its load problems.
func TestFamilyProblems(t *testing.T) {
	t.Parallel()
	tests := []struct{ desc, src, want string }{
		{
			desc: "an image model without a price: the hint is per image",
			src:  "model \"img\" {\n  family = \"image\"\n}\n" + simChannel,
			want: `t.hcl:1,1-12: model "img": no price {} block; every model needs a price (an image model: per unit, e.g. price { per_image = "0.04" }), or free = true to serve it at no charge on purpose`,
		},
		{
			desc: "a speech model without a price: the hint is per character",
			src:  "model \"tts\" {\n  family = \"speech\"\n}\n" + simChannel,
			want: `t.hcl:1,1-12: model "tts": no price {} block; every model needs a price (a speech model: per unit, e.g. price { per_character = "0.04" }), or free = true to serve it at no charge on purpose`,
		},
		{
			desc: "an avatar model without a price: its generations bill per second",
			src:  "model \"av\" {\n  family = \"avatar\"\n}\n" + simChannel,
			want: `t.hcl:1,1-11: model "av": no price {} block; every model needs a price (an avatar model: per unit, e.g. price { per_second = "0.04" }), or free = true to serve it at no charge on purpose`,
		},
		{
			desc: "unknown family",
			src:  "channel \"c\" {\n  vendor   = \"sim\"\n  families = [\"images\"]\n  transport = \"in-process\"\n}",
			want: `t.hcl:3,15-23: channel "c": families: unknown family "images" (want one of ` + allFamilies + `)`,
		},
		{
			desc: "unknown model family",
			src:  "model \"m\" {\n  free   = true\n  family = \"embedding\"\n}\n" + simChannel,
			want: `t.hcl:3,12-23: model "m": family: unknown family "embedding" (want one of ` + allFamilies + `)`,
		},
		{
			desc: "several problems in file order",
			src:  "model \"m\" { family = \"x\" }\nlimits { rpm = -1 }\nserver { durability = \"y\" }\n" + simChannel,
			want: `t.hcl:1,1-10: model "m": no price {} block; every model needs a price (chat: per million tokens, e.g. price { input = "0.15" output = "0.60" }), or free = true to serve it at no charge on purpose` + "\n" +
				`t.hcl:1,22-25: model "m": family: unknown family "x" (want one of ` + allFamilies + `)` + "\n" +
				`t.hcl:2,16-18: limits: rpm: must be at least 0, got -1` + "\n" +
				`t.hcl:3,23-26: server: durability: unknown value "y" (want "" or "strict")`,
		},
		{
			desc: "without a plugin that serves families, chat is the only family",
			src:  "model \"m\" {\n  free   = true\n  family = \"image\"\n}\n",
			want: `t.hcl:3,12-19: model "m": family: unknown family "image" (want one of chat)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte(tc.src), "t.hcl")
			if err != nil {
				err = Recheck(t.Context(), Options{}, err)
			} else {
				err = Check(t.Context(), Options{Config: cfg, Logger: hclog.NewNullLogger()})
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}
