package clip_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/family/clip"
	"github.com/tollgate-gw/tollgate/plugins/family/clip/cliptest"
	"github.com/tollgate-gw/tollgate/plugins/family/subtitle"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func compose(t *testing.T, body string, settings map[string]string) (*clip.Request, *vendor.JobError) {
	t.Helper()
	return clip.Parse(&vendor.JobRequest{Family: clip.Family, Body: []byte(body),
		Model: vendor.JobModel{ID: clip.Model, Settings: settings},
		Refs:  []vendor.JobRef{{Field: "asr_id", TaskID: "sub_1", Family: subtitle.Family, Record: cliptest.Recognition()}}}, false)
}

// The title is cut at 30 characters (not refused), sentences keep the
// recognition's times whatever showRange says, and the defaults of the
// effects are the spec's.
func TestComposeFields(t *testing.T) {
	r, bad := compose(t, `{"video_url":"`+cliptest.Link+`","asr_id":"sub_1","title":"`+strings.Repeat("é", 31)+`",`+
		`"sentences":[{"showRange":[9,9],"content":"A"},{"content":"B"},{"content":"C"}]}`, nil)
	if bad != nil {
		t.Fatal(bad)
	}
	if r.Title != strings.Repeat("é", 30) || !r.Edited || r.Lines[1].Content != "B" || r.Lines[0].Start != 0 || r.Lines[0].End != 1999 ||
		r.TitleEffect || !r.CaptionEffect || !r.KeywordEffect {
		t.Fatalf("%+v", r)
	}
	if _, bad := compose(t, `{"video_url":"`+cliptest.Link+`","asr_id":"sub_1","sentences":[{"content":"A"}]}`, nil); bad == nil ||
		!strings.Contains(bad.Message, "the recognition has 3") {
		t.Fatalf("another count: %v", bad)
	}
	if _, bad := compose(t, `{"video_url":"`+cliptest.Link+`","asr_id":"sub_1","pip_config":[{"media_url":"http://127.0.0.1/x.png","begin_time":0,"end_time":5}]}`, nil); bad == nil ||
		!strings.Contains(bad.Message, "private") {
		t.Fatalf("a private link: %v", bad)
	}
}

// An operator's template file replaces the built-in set; a broken one
// is the operator's error, naming the file.
func TestTemplateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "templates.json")
	if err := os.WriteFile(path, []byte(`{"categories":[{"cate_id":"c1","cate_name":"Ours","sort":1}],`+
		`"templates":[{"style_id":"ours-1","name":"Ours","cover_url":"https://x/c.jpg","demo_url":"https://x/d.mp4","cate_name":"Ours","scene":"s"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	set, bad := clip.SetOf(vendor.JobModel{ID: "m", Settings: map[string]string{clip.SettingTemplates: path}})
	if bad != nil || !set.Has("ours-1") || set.Has("talk-01") || len(set.InCategory("c1")) != 1 || len(set.InCategory("nope")) != 0 {
		t.Fatalf("%+v %v", set, bad)
	}
	if _, bad := compose(t, `{"video_url":"`+cliptest.Link+`","asr_id":"sub_1","video_style_id":"talk-01"}`,
		map[string]string{clip.SettingTemplates: path}); bad == nil || bad.Status != 400 {
		t.Fatalf("a built-in style under the operator's file: %v", bad)
	}
	if err := os.WriteFile(path, []byte(`{"categories":[],"templates":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, bad := clip.SetOf(vendor.JobModel{ID: "m", Settings: map[string]string{clip.SettingTemplates: path}}); bad == nil || bad.Status != 500 ||
		!strings.Contains(bad.Message, "needs categories and templates") || strings.Contains(bad.Message, path) {
		t.Fatalf("an empty set (its path not shown): %v", bad)
	}
	if _, bad := clip.SetOf(vendor.JobModel{ID: "m", Settings: map[string]string{clip.SettingTemplates: path + "x"}}); bad == nil || bad.Status != 500 ||
		!strings.Contains(bad.Message, "clip_templates") || !strings.Contains(bad.Message, "no such file") || strings.Contains(bad.Message, path) {
		t.Fatalf("a missing file (its path not shown): %v", bad)
	}
	if set := clip.Builtin(); len(set.Categories) != 6 || len(set.Templates) < 6 {
		t.Fatalf("built-in set %+v", set)
	}
}
