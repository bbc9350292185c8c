package bench

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
)

// Bar is one bar of a chart panel, with the budget it is judged against
// (0: none).
type Bar struct {
	Label  string
	Value  float64
	Budget float64
}

// Panel is one titled bar group of the chart.
type Panel struct {
	Title string
	Unit  string
	// Decimals is how many the bar and budget labels show.
	Decimals int
	Bars     []Bar
}

// ChartPanels picks the figures the budget reads, as ratios to the
// reference proxy: CPU per call at c=64 and added p50 latency at c=1, for
// the gateway and for the gateway with its vendor in process.
func ChartPanels(r *Results) []Panel {
	cpu := Panel{Title: "CPU per call at c=64 / proxy", Unit: "x", Decimals: 2}
	lat := Panel{Title: "added p50 at c=1 / proxy", Unit: "x", Decimals: 2}
	for _, c := range r.Cases {
		if c.SeededRows > 0 || c.Translated {
			continue
		}
		label := map[bool]string{false: "", true: "stream"}[c.Streaming]
		if label == "" {
			label = "call"
		}
		switch {
		case c.Concurrency == 64 && c.CPURatio != nil:
			budget := BudgetCPURatio
			if c.Streaming {
				budget = BudgetStreamCPURatio
			}
			cpu.Bars = append(cpu.Bars, Bar{Label: label, Value: c.CPURatio.Value, Budget: budget})
			if c.InProcessCPURatio != nil {
				cpu.Bars = append(cpu.Bars, Bar{Label: label + " in-proc", Value: c.InProcessCPURatio.Value, Budget: BudgetInProcessCPURatio})
			}
		case c.Concurrency == 1 && c.AddedP50Ratio != nil:
			lat.Bars = append(lat.Bars, Bar{Label: label, Value: c.AddedP50Ratio.Value, Budget: BudgetAddedP50Ratio})
			if c.InProcessAddedP50Ratio != nil {
				lat.Bars = append(lat.Bars, Bar{Label: label + " in-proc", Value: c.InProcessAddedP50Ratio.Value, Budget: BudgetAddedP50Ratio})
			}
		}
	}
	return []Panel{cpu, lat}
}

var (
	colBackground = color.RGBA{255, 255, 255, 255}
	colAxis       = color.RGBA{60, 60, 60, 255}
	colText       = color.RGBA{20, 20, 20, 255}
	colWithin     = color.RGBA{46, 139, 87, 255}   // within budget
	colOver       = color.RGBA{205, 92, 60, 255}   // over budget
	colBudget     = color.RGBA{200, 30, 30, 255}   // budget marks
	colSubtle     = color.RGBA{120, 120, 120, 255} // footnote
)

const (
	panelW  = 520
	chartH  = 480
	plotTop = 90
	plotBot = 390
)

// RenderChart draws the panels side by side with a footnote line.
func RenderChart(panels []Panel, footnote string) *image.RGBA {
	w := panelW * max(len(panels), 1)
	img := image.NewRGBA(image.Rect(0, 0, w, chartH))
	fill(img, img.Bounds(), colBackground)
	for i, p := range panels {
		drawPanel(img, i*panelW, p)
	}
	drawText(img, 20, chartH-24, footnote, 1, colSubtle)
	return img
}

func drawPanel(img *image.RGBA, x0 int, p Panel) {
	title := fmt.Sprintf("%s (%s)", p.Title, p.Unit)
	drawText(img, x0+(panelW-textWidth(title, 2))/2, 24, title, 2, colText)
	top := 0.0
	for _, b := range p.Bars {
		top = max(top, b.Value, b.Budget)
	}
	if top <= 0 {
		top = 1
	}
	top *= 1.15
	left, right := x0+40, x0+panelW-30
	// Axis: the zero line and the left edge.
	fill(img, image.Rect(left, plotBot, right, plotBot+2), colAxis)
	fill(img, image.Rect(left, plotTop, left+2, plotBot), colAxis)
	if len(p.Bars) == 0 {
		drawText(img, left+20, (plotTop+plotBot)/2, "no data", 2, colSubtle)
		return
	}
	slot := (right - left) / len(p.Bars)
	barW := slot * 4 / 10
	height := func(v float64) int {
		if v <= 0 {
			return 0
		}
		return int(v / top * float64(plotBot-plotTop))
	}
	for i, b := range p.Bars {
		sx := left + i*slot
		bx := sx + (slot-barW)/2
		h := height(b.Value)
		col := colWithin
		if b.Budget > 0 && b.Value > b.Budget {
			col = colOver
		}
		fill(img, image.Rect(bx, plotBot-h, bx+barW, plotBot), col)
		labelY := plotBot - h - 20
		if b.Budget > 0 {
			by := plotBot - height(b.Budget)
			for x := sx + 6; x < sx+slot-6; x += 8 {
				fill(img, image.Rect(x, by-1, x+5, by+1), colBudget)
			}
			// The budget's number sits right of the bar, clear of its label.
			lbl := fmt.Sprintf("%.*f", p.Decimals, b.Budget)
			drawText(img, bx+barW+6, by-10, lbl, 1, colBudget)
			if labelY < by+4 && labelY+14 > by-4 {
				labelY = by - 20
			}
		}
		val := fmt.Sprintf("%.*f", p.Decimals, b.Value)
		drawText(img, bx+(barW-textWidth(val, 2))/2, labelY, val, 2, colText)
		drawText(img, sx+(slot-textWidth(b.Label, 1))/2, plotBot+12, b.Label, 1, colText)
	}
}

// WriteChart renders r's chart as a PNG file.
func WriteChart(r *Results, path string) error {
	foot := fmt.Sprintf("tollgate-bench %s, %d cpu, %s windows x %d rounds. bars green within budget, red over; dashed line: budget",
		r.Machine.Date.UTC().Format("2006-01-02"), r.Machine.NProc, r.Window, r.Rounds)
	var buf bytes.Buffer
	if err := png.Encode(&buf, RenderChart(ChartPanels(r), foot)); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
