package bench

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestChartPanels(t *testing.T) {
	t.Parallel()
	r := sampleResults()
	panels := ChartPanels(r)
	if len(panels) != 2 {
		t.Fatalf("%d panels", len(panels))
	}
	cpu, lat := panels[0], panels[1]
	// Neither the seeded nor the translated case is charted; the stream
	// and the in-process gateway get their own budgets.
	if len(cpu.Bars) != 3 || cpu.Bars[0].Value != 0.9 || cpu.Bars[0].Budget != BudgetCPURatio ||
		cpu.Bars[1].Value != 0.8 || cpu.Bars[1].Budget != BudgetInProcessCPURatio || cpu.Bars[2].Budget != BudgetStreamCPURatio {
		t.Fatalf("cpu bars %+v", cpu.Bars)
	}
	if len(lat.Bars) != 3 || lat.Bars[0].Value != 1.1 || lat.Bars[0].Budget != BudgetAddedP50Ratio || lat.Bars[1].Budget != BudgetAddedP50Ratio || lat.Bars[2].Value != 1.5 {
		t.Fatalf("latency bars %+v", lat.Bars)
	}
}

func count(img image.Image, r image.Rectangle, want [4]uint32) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, ca := img.At(x, y).RGBA()
			if [4]uint32{cr >> 8, cg >> 8, cb >> 8, ca >> 8} == want {
				n++
			}
		}
	}
	return n
}

func TestWriteChart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latest.png")
	if err := WriteChart(sampleResults(), path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != 2*panelW || b.Dy() != chartH {
		t.Fatalf("size %v", b)
	}
	green := [4]uint32{uint32(colWithin.R), uint32(colWithin.G), uint32(colWithin.B), 255}
	red := [4]uint32{uint32(colOver.R), uint32(colOver.G), uint32(colOver.B), 255}
	tests := []struct {
		desc  string
		panel image.Rectangle
		col   [4]uint32
		want  bool
	}{
		// Left panel: 0.9, 0.8 and 1.05, all within their budgets.
		{desc: "cpu within budget is green", panel: image.Rect(0, 0, panelW, chartH), col: green, want: true},
		{desc: "no cpu bar is red", panel: image.Rect(0, 0, panelW, chartH), col: red, want: false},
		// Right panel: 1.1 within 1.2, the stream's 1.5 over it.
		{desc: "latency within budget is green", panel: image.Rect(panelW, 0, 2*panelW, chartH), col: green, want: true},
		{desc: "latency over budget is red", panel: image.Rect(panelW, 0, 2*panelW, chartH), col: red, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			// A bar is at least a few hundred pixels; text never uses these colours.
			if got := count(img, tc.panel, tc.col) > 200; got != tc.want {
				t.Fatalf("found bar colour: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRenderChartEmpty(t *testing.T) {
	t.Parallel()
	img := RenderChart([]Panel{{Title: "nothing", Unit: "µs"}}, "foot")
	if img.Bounds().Dx() != panelW {
		t.Fatalf("size %v", img.Bounds())
	}
}

func TestDrawText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		text  string
		scale int
	}{
		{desc: "digits", text: "0123456789", scale: 1},
		{desc: "letters, lower case drawn as upper", text: "abc XYZ", scale: 2},
		{desc: "punctuation and micro", text: "µs (c=64) 25% -1.5/2:", scale: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			w := textWidth(tc.text, tc.scale)
			img := image.NewRGBA(image.Rect(0, 0, w+2, 7*tc.scale+2))
			drawText(img, 1, 1, tc.text, tc.scale, colText)
			ink := count(img, img.Bounds(), [4]uint32{uint32(colText.R), uint32(colText.G), uint32(colText.B), 255})
			if ink == 0 {
				t.Fatal("nothing drawn")
			}
			// Nothing beyond the computed width.
			clip := image.NewRGBA(image.Rect(0, 0, w+40, 7*tc.scale+2))
			drawText(clip, 1, 1, tc.text, tc.scale, colText)
			if n := count(clip, image.Rect(w+2, 0, w+40, 7*tc.scale+2), [4]uint32{uint32(colText.R), uint32(colText.G), uint32(colText.B), 255}); n != 0 {
				t.Fatalf("%d pixels past the text width", n)
			}
		})
	}
	for r, g := range glyphs {
		for _, row := range g {
			if len(row) != 5 {
				t.Fatalf("glyph %q has a row of %d", r, len(row))
			}
		}
	}
}
