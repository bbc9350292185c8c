package images

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Model settings the rules read from vendor.JobModel.Settings (the model
// block's family settings, as strings). Other settings are the plugin's.
const (
	// SettingGrid: a fixed-grid model always returns this many images and
	// ignores n (rule 2), e.g. "4".
	SettingGrid = "grid"
	// SettingAreaThreshold: with the "hd" price tier, an output area above
	// this many megapixels is priced at hd (rule 5), e.g. "2.61".
	SettingAreaThreshold = "area_threshold_mp"
	// SettingIgnoreSize: "true" for a model that ignores size (rule 6):
	// size is not sent.
	SettingIgnoreSize = "ignore_size"
)

// TierHD is the price tier of an area-priced model's large images
// (price { per_image_hd }).
const TierHD = "hd"

// Model is what the rules need of a model: its id and family settings.
type Model struct {
	ID string // as the client named it
	// Grid is the fixed number of images a fixed-grid model returns; 0
	// for models that honour n.
	Grid int
	// AreaThreshold is the hd tier's threshold in pixels; 0 when the model
	// is not area-priced (it needs the hd tier and the setting).
	AreaThreshold int64
	IgnoreSize    bool
}

// ModelOf reads a job's model. A malformed setting is the operator's
// error, reported as such.
func ModelOf(jm vendor.JobModel) (Model, error) {
	m := Model{ID: jm.ID}
	if v, ok := jm.Settings[SettingGrid]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > MaxN {
			return m, fmt.Errorf("model %q: setting %s = %q: want a whole number 1..%d", jm.ID, SettingGrid, v, MaxN)
		}
		m.Grid = n
	}
	if v, ok := jm.Settings[SettingAreaThreshold]; ok {
		px, err := megapixels(v)
		if err != nil {
			return m, fmt.Errorf("model %q: setting %s = %q: %v", jm.ID, SettingAreaThreshold, v, err)
		}
		if slices.Contains(jm.Tiers, TierHD) {
			m.AreaThreshold = px
		}
	}
	if v, ok := jm.Settings[SettingIgnoreSize]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return m, fmt.Errorf("model %q: setting %s = %q: want true or false", jm.ID, SettingIgnoreSize, v)
		}
		m.IgnoreSize = b
	}
	return m, nil
}

// megapixels parses a decimal count of megapixels ("2.61") into pixels,
// exactly: no float rounding decides a tier.
func megapixels(s string) (int64, error) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 6 || strings.ContainsAny(whole+frac, "+-") {
		return 0, fmt.Errorf("want a decimal number of megapixels like 2.61")
	}
	w := int64(0)
	if whole != "" {
		n, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || n > 1000 {
			return 0, fmt.Errorf("want a decimal number of megapixels like 2.61")
		}
		w = n
	}
	f := int64(0)
	if frac != "" {
		n, err := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("want a decimal number of megapixels like 2.61")
		}
		f = n
	}
	px := w*1_000_000 + f
	if px <= 0 {
		return 0, fmt.Errorf("the threshold must be above zero")
	}
	return px, nil
}

// AreaPriced reports whether the model prices by output area (rule 5).
func (m Model) AreaPriced() bool { return m.AreaThreshold > 0 }

// TierOf is the tier of an image of w x h pixels: hd above the threshold
// of an area-priced model, else the base tier ("").
func (m Model) TierOf(w, h int) string {
	if m.AreaPriced() && int64(w)*int64(h) > m.AreaThreshold {
		return TierHD
	}
	return ""
}

// HeldTier is the tier a request is held at: for an area-priced model,
// hd when the size is omitted (or ignored, or not WxH), else the tier of
// the requested size (rule 5).
func (m Model) HeldTier(r *Request) string {
	if !m.AreaPriced() {
		return ""
	}
	if m.IgnoreSize || r.Width == 0 {
		return TierHD
	}
	return m.TierOf(r.Width, r.Height)
}

// HoldCount is the number of images held: n, or max(n, grid) for a
// fixed-grid model (rules 1 and 2).
func (m Model) HoldCount(r *Request) int {
	if m.Grid > 0 {
		return max(r.N, m.Grid)
	}
	return r.N
}

// Hold is the units to hold for a request.
func (m Model) Hold(r *Request) []vendor.Units {
	return []vendor.Units{{Tier: m.HeldTier(r), Count: int64(m.HoldCount(r))}}
}

// Delivered is the units to settle for the images actually returned,
// given each one's actual size (0 x 0 when unknown): one unit per image up
// to the held count, each at the tier of its size but never above the
// held tier (settlement only moves downward, rule 5). Nil when none.
func (m Model) Delivered(r *Request, sizes [][2]int) []vendor.Units {
	held := m.HeldTier(r)
	n := min(len(sizes), m.HoldCount(r))
	var base, hd int64
	for _, s := range sizes[:n] {
		tier := held
		if held == TierHD && s[0] > 0 && s[1] > 0 {
			tier = m.TierOf(s[0], s[1])
		}
		if tier == TierHD {
			hd++
		} else {
			base++
		}
	}
	var out []vendor.Units
	if base > 0 {
		out = append(out, vendor.Units{Count: base})
	}
	if hd > 0 {
		out = append(out, vendor.Units{Tier: TierHD, Count: hd})
	}
	return out
}
