// Package cliptest is the conformance suite every clip plugin passes:
// composes against a recognition (its record, as the gateway resolves an
// asr_id) and the template reads. The upstream must obey the sim's job
// markers in the links' query strings.
package cliptest

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/clip"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/subtitle"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/family/video/videotest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the clip plugin under test (Model: clip-compose on the
// built-in templates).
type Target = familytest.Target

// Link is the source every case composes, and Recognition a recognition
// of it with three lines, as its record holds it.
const Link = "https://media.example/talk.mp4"

// Recognition is a finished recognition's record of Link, three lines.
func Recognition() []byte {
	req := &vendor.JobRequest{Family: subtitle.Family, TaskID: "sub_cliptest", Submitted: time.Unix(1767225600, 0),
		Model: vendor.JobModel{ID: subtitle.Model}}
	out := subtitle.Recognised(req, &subtitle.Request{VideoURL: Link}, []subtitle.Line{
		{Start: 0, End: 1999, Content: "today we drive"}, {Start: 2000, End: 3999, Content: "along the coast"},
		{Start: 4000, End: 5999, Content: "to the old toll booth"}}, 6)
	return out.Body
}

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	refs := []vendor.JobRef{{Field: "asr_id", TaskID: "sub_cliptest", Family: subtitle.Family, Model: subtitle.Model, Record: Recognition()}}
	c := func(body string) familytest.Case { return familytest.Case{Body: body, Refs: refs} }
	base := `"video_url":"` + Link + `","asr_id":"sub_cliptest"`
	lines := func(n int) string {
		ls := make([]string, n)
		for i := range ls {
			ls[i] = `{"showRange":[0,1],"content":"line ` + string(rune('a'+i)) + `"}`
		}
		return `[` + strings.Join(ls, ",") + `]`
	}
	pips := func(n int) string {
		ps := make([]string, n)
		for i := range ps {
			ps[i] = `{"media_url":"https://media.example/p.png","begin_time":0,"end_time":1000}`
		}
		return `[` + strings.Join(ps, ",") + `]`
	}
	s := &familytest.Suite{
		Target: tg, Spec: clip.Spec(), Operation: video.OpGenerations, Async: true,
		Refusals: []familytest.Case{
			c(`{"asr_id":"sub_cliptest"}`),
			c(`{"video_url":"` + Link + `"}`),
			{Desc: "an asr_id the gateway did not resolve", Body: `{"video_url":"` + Link + `","asr_id":"asr-123"}`},
			c(`{"video_url":"https://media.example/other.mp4","asr_id":"sub_cliptest"}`),
			c(`{` + base + `,"video_style_id":"no-such-style"}`),
			c(`{` + base + `,"name_card":{"name":"` + strings.Repeat("n", 21) + `"}}`),
			c(`{` + base + `,"name_card":{"name":"Ada","description":"` + strings.Repeat("d", 41) + `"}}`),
			c(`{` + base + `,"pip_config":` + pips(21) + `}`),
			c(`{` + base + `,"pip_config":[{"media_url":"https://media.example/p.png","begin_time":1000,"end_time":1000}]}`),
			c(`{` + base + `,"pip_config":[{"media_url":"https://media.example/p.png","begin_time":-1,"end_time":10}]}`),
			c(`{` + base + `,"sentences":` + lines(2) + `}`),
			c(`{` + base + `,"sentences":[{"content":"a"},{"content":" "},{"content":"c"}]}`),
			c(`{` + base + `,"music_url":"ftp://h/m.mp3"}`),
			c(`{` + base + `,"enable_title_effect":"yes"}`),
		},
		Holds: []familytest.Hold{{Desc: "one task", Body: `{` + base + `}`, Want: []vendor.Units{{Count: 1}}}},
		Good: c(`{` + base + `,"video_style_id":"talk-01","title":"` + strings.Repeat("t", 40) + `","enable_title_effect":true,` +
			`"name_card":{"name":"Ada","description":"Engineer"},"sentences":` + lines(3) + `,"pip_config":` + pips(20) +
			`,"music_url":"https://media.example/m.mp3"}`),
		Marked: func(m string) familytest.Case {
			return c(`{"video_url":"` + Link + `","asr_id":"sub_cliptest","music_url":"https://media.example/m.mp3?m=` + m + `"}`)
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			videotest.CheckVideo(t, req, out, vendor.Units{Count: 1})
		},
	}
	for i := range s.Refusals {
		if s.Refusals[i].Desc == "" {
			s.Refusals[i].Desc = s.Refusals[i].Body
		}
	}
	s.Run(t)
	v := tg.New(t)
	t.Run("template_reads", func(t *testing.T) {
		rd, ok := v.(vendor.JobReader)
		if !ok {
			t.Fatal("a clip plugin answers the template reads (vendor.JobReader)")
		}
		read := func(op, query string) gjson.Result {
			out, err := rd.Read(familytest.Ctx(t), &vendor.JobRequest{Family: clip.Family, Operation: op, Channel: "main",
				Model: tg.Model, Body: []byte(query)})
			if err != nil || out.Error != nil {
				t.Fatalf("%s: %+v %v", op, out, err)
			}
			return gjson.ParseBytes(out.Body)
		}
		cats := read(clip.OpCategories, `{}`).Get("list").Array()
		if len(cats) != 6 || familytest.Keys(cats[0]) != "cate_id,cate_name,sort" {
			t.Fatalf("categories %v", cats)
		}
		all := read(clip.OpTemplates, `{}`)
		if all.Get("sid").Type != gjson.String || all.Get("sid").Str != "" || all.Get("api_version").Str == "" ||
			familytest.Keys(all.Get("list.0")) != "style_id,name,cover_url,demo_url,cate_name,scene" {
			t.Fatalf("templates %s", all.Raw)
		}
		one := read(clip.OpTemplates, `{"cate_id":"`+cats[1].Get("cate_id").Str+`"}`).Get("list").Array()
		if len(one) == 0 || len(one) >= len(all.Get("list").Array()) {
			t.Fatalf("templates of one category: %v", one)
		}
		for _, tp := range one {
			if tp.Get("cate_name").Str != cats[1].Get("cate_name").Str {
				t.Fatalf("template %s is not of %s", tp.Raw, cats[1].Raw)
			}
		}
	})
}
