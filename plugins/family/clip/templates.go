package clip

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Clip templates and their categories are operator data: the JSON file a
// clip model's clip_templates setting names, or without one the built-in
// set below (six categories, two templates each), which the embedded
// default serves. Only a listed template's style_id is accepted by a
// compose.

// SettingTemplates is the model setting naming the operator's file.
const SettingTemplates = "clip_templates"

// Category is a template category.
type Category struct {
	CateID   string `json:"cate_id"`
	CateName string `json:"cate_name"`
	Sort     int    `json:"sort"`
}

// Template is a clip template; CateName ties it to its category.
type Template struct {
	StyleID  string `json:"style_id"`
	Name     string `json:"name"`
	CoverURL string `json:"cover_url"`
	DemoURL  string `json:"demo_url"`
	CateName string `json:"cate_name"`
	Scene    string `json:"scene"`
}

// Set is a template set: the file's shape, {categories, templates}.
type Set struct {
	Categories []Category `json:"categories"`
	Templates  []Template `json:"templates"`
}

// Has reports whether styleID is a listed template.
func (s *Set) Has(styleID string) bool {
	return slices.ContainsFunc(s.Templates, func(t Template) bool { return t.StyleID == styleID })
}

// InCategory lists the templates of the category cateID ("" for all);
// an unknown category has none.
func (s *Set) InCategory(cateID string) []Template {
	if cateID == "" {
		return s.Templates
	}
	i := slices.IndexFunc(s.Categories, func(c Category) bool { return c.CateID == cateID })
	if i < 0 {
		return nil
	}
	var out []Template
	for _, t := range s.Templates {
		if t.CateName == s.Categories[i].CateName {
			out = append(out, t)
		}
	}
	return out
}

// Sorted is the categories in their sort order.
func (s *Set) Sorted() []Category {
	out := slices.Clone(s.Categories)
	slices.SortStableFunc(out, func(a, b Category) int { return a.Sort - b.Sort })
	return out
}

// check refuses a set a client could not use: ids missing or repeated, a
// template of no listed category.
func (s *Set) check() error {
	if len(s.Categories) == 0 || len(s.Templates) == 0 {
		return fmt.Errorf("it needs categories and templates")
	}
	cats := map[string]bool{}
	ids := map[string]bool{}
	for i, c := range s.Categories {
		switch {
		case strings.TrimSpace(c.CateID) == "" || strings.TrimSpace(c.CateName) == "":
			return fmt.Errorf("categories[%d] needs cate_id and cate_name", i)
		case ids[c.CateID]:
			return fmt.Errorf("categories[%d]: cate_id %q appears twice", i, c.CateID)
		case cats[c.CateName]:
			return fmt.Errorf("categories[%d]: cate_name %q appears twice", i, c.CateName)
		}
		ids[c.CateID], cats[c.CateName] = true, true
	}
	styles := map[string]bool{}
	for i, t := range s.Templates {
		switch {
		case strings.TrimSpace(t.StyleID) == "" || strings.TrimSpace(t.Name) == "":
			return fmt.Errorf("templates[%d] needs style_id and name", i)
		case styles[t.StyleID]:
			return fmt.Errorf("templates[%d]: style_id %q appears twice", i, t.StyleID)
		case !cats[t.CateName]:
			return fmt.Errorf("templates[%d] (%s): cate_name %q is no listed category", i, t.StyleID, t.CateName)
		}
		styles[t.StyleID] = true
	}
	return nil
}

// Load reads and checks a template file.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Set
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a template file ({categories: [{cate_id, cate_name, sort}], templates: [{style_id, name, cover_url, demo_url, cate_name, scene}]}): %w", err)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// loadedFile is a file's set (or why it has none) as of its last change.
type loadedFile struct {
	mod   time.Time
	size  int64
	set   *Set
	fault error
}

// loaded caches each file's set until the file changes: a cache of the
// operator's files (by path), not a registry; every model naming a file
// reads the same set.
var loaded = struct {
	sync.Mutex
	files map[string]*loadedFile
}{files: map[string]*loadedFile{}}

// SetOf is the template set of model m: its clip_templates file's (read
// again when it changes), or the built-in one. A file that cannot be read
// is the operator's error, naming it.
func SetOf(m vendor.JobModel) (*Set, *vendor.JobError) {
	path := strings.TrimSpace(m.Settings[SettingTemplates])
	if path == "" {
		return Builtin(), nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, rules.Operator("the model " + m.ID + "'s clip_templates file cannot be read: " + withoutPath(err).Error())
	}
	loaded.Lock()
	defer loaded.Unlock()
	f := loaded.files[path]
	if f == nil || !f.mod.Equal(fi.ModTime()) || f.size != fi.Size() {
		f = &loadedFile{mod: fi.ModTime(), size: fi.Size()}
		f.set, f.fault = Load(path)
		loaded.files[path] = f
	}
	if f.fault != nil {
		return nil, rules.Operator("the model " + m.ID + "'s clip_templates file: " + withoutPath(f.fault).Error())
	}
	return f.set, nil
}

// withoutPath is err without the file's path: a client's answer names the
// setting, never the operator's file system.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// Builtin is the set the binary carries.
func Builtin() *Set { return &builtin }

var builtin = func() Set {
	cats := []struct{ id, name, slug string }{
		{"1", "Talk & knowledge", "talk"}, {"2", "Vlog & lifestyle", "vlog"}, {"3", "Product showcase", "product"},
		{"4", "News & commentary", "news"}, {"5", "Food & cooking", "food"}, {"6", "Travel & outdoors", "travel"},
	}
	styles := [][2][2]string{
		{{"Clean explainer", "a presenter explaining one idea"}, {"Bold headline", "a talk with key points called out"}},
		{{"Day in the life", "a personal day told to camera"}, {"Soft diary", "a calm, personal story"}},
		{{"Unboxing", "a product opened and shown"}, {"Feature callouts", "a product's features one by one"}},
		{{"Breaking card", "a short news update"}, {"Opinion panel", "a commentary with a name card"}},
		{{"Recipe steps", "a recipe told step by step"}, {"Taste test", "a tasting with reactions"}},
		{{"Road trip", "a journey with places named"}, {"Trail guide", "an outdoor route explained"}},
	}
	var s Set
	for i, c := range cats {
		s.Categories = append(s.Categories, Category{CateID: c.id, CateName: c.name, Sort: i + 1})
		for j, st := range styles[i] {
			id := fmt.Sprintf("%s-%02d", c.slug, j+1)
			base := "https://example.com/clip-templates/" + id
			s.Templates = append(s.Templates, Template{StyleID: id, Name: st[0], CoverURL: base + "/cover.jpg",
				DemoURL: base + "/demo.mp4", CateName: c.name, Scene: st[1]})
		}
	}
	return s
}()

// Operations of the template reads.
const (
	OpCategories = "categories"
	OpTemplates  = "templates"
)

// Read answers the template reads of model m's set: the categories
// {list}; the templates {list, sid: "", api_version}, of one category
// with the query's cate_id. Every clip plugin answers them with it.
func Read(req *vendor.JobRequest) *vendor.JobOutcome {
	set, bad := SetOf(req.Model)
	if bad != nil {
		return rules.Refused(bad)
	}
	switch req.Operation {
	case OpCategories:
		cs := set.Sorted()
		return rules.Answer(rules.NewRecord().Raw("list", rules.List(len(cs), func(i int) *rules.Record {
			return rules.NewRecord().Str("cate_id", cs[i].CateID).Str("cate_name", cs[i].CateName).Int("sort", int64(cs[i].Sort))
		})).Bytes())
	case OpTemplates:
		var q struct {
			CateID string `json:"cate_id"`
		}
		_ = json.Unmarshal(req.Body, &q) // the query parameters; none is all
		ts := set.InCategory(q.CateID)
		return rules.Answer(rules.NewRecord().Raw("list", rules.List(len(ts), func(i int) *rules.Record {
			t := ts[i]
			return rules.NewRecord().Str("style_id", t.StyleID).Str("name", t.Name).Str("cover_url", t.CoverURL).
				Str("demo_url", t.DemoURL).Str("cate_name", t.CateName).Str("scene", t.Scene)
		})).Str("sid", "").Str("api_version", APIVersion).Bytes())
	}
	return rules.Refused(rules.Invalid("no read " + req.Operation + " of the clip family"))
}
