package htmlreport

import (
	"fmt"
	"sort"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// The timeline's geometry, in SVG user units (pixels at 100%).
const (
	plotLeft   = 118  // room for the lanes' labels
	plotWidth  = 860  // the time axis
	rowHeight  = 9    // one row: the recording, the old build or the new build
	laneGap    = 7    // between two connections' lanes
	axisHeight = 42   // the time axis and the jump labels below the lanes
	topMargin  = 30   // the failure's and the finding's labels above the lanes
	jumpWidth  = 18   // what a clock jump takes of the axis, however long it is
	binWidth   = 2    // one aggregated mark: every step within 2 px of time
	maxLanes   = 12   // connections drawn apart; the others share one lane
	maxJumps   = 40   // the longest gaps drawn as jumps; shorter ones stay linear
	minJump    = 1e6  // a gap of at least 1 s of virtual time is a clock jump (µs)
	labelEvery = 70.0 // the least room between two time labels
)

// rows are what each lane shows, top to bottom.
var rows = [3]string{"rec", "old", "new"}

// severity orders the mark classes: an aggregated mark takes its worst
// step's class.
var severity = map[string]int{"notrun": 0, "ok": 1, "error": 2, "differs": 3, "hang": 4, "crash": 5}

// timeline is the SVG of an incident's steps across virtual time.
type timeline struct {
	Width, Height int
	PlotLeft      int
	PlotRight     int
	PlotWidthPx   int
	LanesBottom   int
	Lanes         []lane
	Marks         []mark
	Jumps         []jump
	Lines         []vline
	Ticks         []tick
	Steps         int
	// Aggregated: more steps than the axis has room for, so each mark
	// stands for the steps within binWidth of time.
	Aggregated bool
	// Timed: the report gives each step's recorded time; otherwise the
	// steps are spaced evenly, in order.
	Timed bool
	Span  string // the virtual time the incident covers
}

type lane struct {
	Label string
	Y     int // top of the lane's first row
	RowY  [3]int
	Rows  [3]string
}

type mark struct {
	X, Y, W, H float64
	Class      string
	Title      string
	Step       int // 0 for an aggregated mark
	ID         string
}

type jump struct {
	X     float64
	Label string // "" when the jumps beside it leave no room: Title has it
	Title string
	Dy    int // the label's row below the axis
}

type vline struct {
	X      float64
	Class  string
	Label  string
	Step   int
	ID     string
	Anchor string // the label's text-anchor
	LabelY int
}

type tick struct {
	X      float64
	Label  string
	Anchor string
}

// stepPoint is one step as the timeline places it.
type stepPoint struct {
	step  int
	conn  uint64
	at    int64 // µs since the recording started, or the step's index
	class [3]string
	title string
}

// buildTimeline lays out a report's steps. prefix makes the ids unique
// on a page with several reports.
func buildTimeline(rep *grade.Report, prefix string) *timeline {
	if len(rep.Evidence.New.Steps) == 0 {
		return nil
	}
	pts, timed := timelinePoints(rep)
	tl := &timeline{Width: plotLeft + plotWidth + 16, PlotLeft: plotLeft, PlotRight: plotLeft + plotWidth, PlotWidthPx: plotWidth, Steps: len(pts), Timed: timed}
	xOf := layoutAxis(tl, pts, timeOrder(pts), timed)
	laneOf := layoutLanes(tl, pts)
	placeMarks(tl, pts, xOf, laneOf)
	placeLines(tl, rep, pts, xOf, prefix)
	return tl
}

// timelinePoints is each step of the new build's replay with its three
// rows' classes and its title; timed says whether the report gives the
// steps' recorded times (otherwise a step's time is its index).
func timelinePoints(rep *grade.Report) (pts []stepPoint, timed bool) {
	ev := rep.Evidence
	steps := ev.New.Steps
	noise := noiseOf(ev.Noise)
	old := map[int]grade.StepEvidence{}
	for _, s := range ev.Old.Steps {
		old[s.Step] = s
	}
	diverged := map[int]bool{}
	for _, f := range rep.Findings {
		if f.Kind == grade.Diverged {
			diverged[f.Step] = true
		}
	}
	for _, s := range steps {
		if s.AtUS > 0 {
			timed = true
			break
		}
	}
	pts = make([]stepPoint, len(steps))
	for i, s := range steps {
		p := stepPoint{step: s.Step, conn: s.Conn, at: int64(i)}
		if timed {
			p.at = s.AtUS
		}
		o, hasOld := old[s.Step]
		p.class[0] = outcomeClass(s.Recorded, true)
		p.class[1] = "notrun"
		if hasOld {
			p.class[1] = outcomeClass(o.Outcome, o.Ran)
		}
		p.class[2] = outcomeClass(s.Outcome, s.Ran)
		// An answer other than the recording's, noise aside, where it
		// counts: before the failure (every step of a contract), or where
		// a finding says the fix does not explain it.
		if counted, _ := noise.Split(s.Diffs); len(counted) > 0 && s.Ran && s.Outcome.Kind == s.Recorded.Kind &&
			(ev.Contract || s.Step < ev.Failure.Step || diverged[s.Step]) {
			p.class[2] = "differs"
		}
		p.title = fmt.Sprintf("step %d (conn %d%s): %s\nrecorded %s, old build %s, new build %s",
			s.Step, s.Conn, atLabel(timed, s.AtUS), cut(s.Request, 120), s.Recorded, outcomeOr(o.Outcome, hasOld && o.Ran), outcomeOr(s.Outcome, s.Ran))
		if p.class[2] == "differs" {
			p.title += " (answer differs from the recording)"
		}
		pts[i] = p
	}
	return pts, timed
}

// timeOrder is the points' indexes in the order of their times. Steps
// are in the recording's order, so their times do not go back; sort
// anyway, so that a hand-edited report cannot fold the axis.
func timeOrder(pts []stepPoint) []int {
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return pts[order[a]].at < pts[order[b]].at })
	return order
}

// layoutLanes fills in the timeline's lanes and height, and returns
// each connection's lane: the busiest connections apart (up to
// maxLanes), the rest in one.
func layoutLanes(tl *timeline, pts []stepPoint) map[uint64]int {
	count := map[uint64]int{}
	for _, p := range pts {
		count[p.conn]++
	}
	conns := make([]uint64, 0, len(count))
	for c := range count {
		conns = append(conns, c)
	}
	sort.Slice(conns, func(a, b int) bool { return conns[a] < conns[b] })
	laneOf := map[uint64]int{}
	if len(conns) > maxLanes {
		busiest := append([]uint64(nil), conns...)
		sort.SliceStable(busiest, func(a, b int) bool { return count[busiest[a]] > count[busiest[b]] })
		kept := busiest[:maxLanes-1]
		sort.Slice(kept, func(a, b int) bool { return kept[a] < kept[b] })
		for i, c := range kept {
			laneOf[c] = i
		}
		for _, c := range conns {
			if _, ok := laneOf[c]; !ok {
				laneOf[c] = maxLanes - 1
			}
		}
		conns = append(kept, 0)
	} else {
		for i, c := range conns {
			laneOf[c] = i
		}
	}
	y := topMargin
	for i, c := range conns {
		l := lane{Label: fmt.Sprintf("conn %d", c), Y: y, Rows: rows}
		if c == 0 && len(count) > maxLanes && i == maxLanes-1 {
			l.Label = fmt.Sprintf("%d other conns", len(count)-(maxLanes-1))
		} else if c == 0 {
			l.Label = "conn ?"
		}
		for r := range rows {
			l.RowY[r] = y + r*rowHeight
		}
		tl.Lanes = append(tl.Lanes, l)
		y += 3*rowHeight + laneGap
	}
	tl.LanesBottom = y - laneGap
	tl.Height = tl.LanesBottom + axisHeight
	return laneOf
}

// placeMarks fills in the timeline's marks: one per step and row, or
// per bin of binWidth when there are more steps than the axis has room
// for.
func placeMarks(tl *timeline, pts []stepPoint, xOf []float64, laneOf map[uint64]int) {
	tl.Aggregated = len(pts) > plotWidth/3
	if tl.Aggregated {
		tl.Marks = aggregate(pts, xOf, laneOf, tl.Lanes)
		return
	}
	w := float64(plotWidth) / float64(len(pts)) * 0.7
	w = max(2, min(w, 10))
	for i := range pts {
		p := pts[i]
		x := xOf[i]
		ln := tl.Lanes[laneOf[p.conn]]
		for r := range rows {
			m := mark{X: x - w/2, Y: float64(ln.RowY[r]) + 1, W: w, H: rowHeight - 2, Class: p.class[r], Title: rowName(r) + ": " + p.title, Step: p.step}
			tl.Marks = append(tl.Marks, m)
		}
	}
}

// placeLines fills in the timeline's vertical lines: the failing step,
// and the first finding's step when it is the fixture's own.
func placeLines(tl *timeline, rep *grade.Report, pts []stepPoint, xOf []float64, prefix string) {
	failure := rep.Evidence.Failure.Step
	for i, p := range pts {
		if failure > 0 && p.step == failure {
			tl.Lines = append(tl.Lines, vline{X: xOf[i], Class: "failure", Label: fmt.Sprintf("failure @%d", failure), Step: failure, ID: prefix + "failure"})
		}
	}
	if len(rep.Findings) > 0 {
		f := rep.Findings[0]
		if f.Kind != grade.VariantFailed && f.Step > 0 && f.Step != failure {
			for i, p := range pts {
				if p.step == f.Step {
					tl.Lines = append(tl.Lines, vline{X: xOf[i], Class: "finding", Label: fmt.Sprintf("%s @%d", f.Kind, f.Step), Step: f.Step, ID: prefix + "finding"})
				}
			}
		} else if f.Kind != grade.VariantFailed && f.Step == failure {
			for i := range tl.Lines {
				tl.Lines[i].Label = fmt.Sprintf("failure and %s @%d", f.Kind, failure)
			}
		}
	}
	// Labels near the right edge read leftwards; two lines close together
	// have their labels on two heights, so that neither hides the other.
	for i := range tl.Lines {
		tl.Lines[i].Anchor, tl.Lines[i].LabelY = "start", 10
		if tl.Lines[i].X > float64(tl.PlotRight)-150 {
			tl.Lines[i].Anchor = "end"
		}
	}
	if len(tl.Lines) == 2 && abs(tl.Lines[0].X-tl.Lines[1].X) < 160 {
		tl.Lines[1].LabelY = 22
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func rowName(r int) string {
	return [3]string{"recording", "old build", "new build"}[r]
}

// layoutAxis returns each step's x, and fills in the timeline's jumps,
// ticks and span. Gaps of a second or more with no request are clock
// jumps (the replay moves the clock across them at once): each takes
// jumpWidth of the axis, whatever its length, and is labelled with it.
// The stretches between them share the rest, half by their time and
// half by their steps, so that a burst of steps stays readable beside a
// long quiet stretch.
func layoutAxis(tl *timeline, pts []stepPoint, order []int, timed bool) []float64 {
	xOf := make([]float64, len(pts))
	first, last := pts[order[0]].at, pts[order[len(order)-1]].at
	if timed {
		tl.Span = duration(last - first)
	}
	var gaps []gap
	if timed {
		gaps = clockJumps(pts, order)
	}
	// Stretches between the jumps: [from, to] in order.
	type stretch struct{ from, to int }
	var parts []stretch
	from := 0
	for _, g := range gaps {
		parts = append(parts, stretch{from, g.after})
		from = g.after + 1
	}
	parts = append(parts, stretch{from, len(order) - 1})
	var totalTime int64
	for _, s := range parts {
		totalTime += pts[order[s.to]].at - pts[order[s.from]].at
	}
	room := float64(plotWidth - 12 - len(gaps)*jumpWidth) // 6 px inside each end
	x := float64(plotLeft + 6)
	lastLabel := -labelEvery
	for i, s := range parts {
		n := s.to - s.from + 1
		share := float64(n) / float64(len(order))
		if totalTime > 0 {
			share = share/2 + float64(pts[order[s.to]].at-pts[order[s.from]].at)/float64(totalTime)/2
		}
		w := room * share
		t0, t1 := pts[order[s.from]].at, pts[order[s.to]].at
		for k := s.from; k <= s.to; k++ {
			switch {
			case t1 > t0:
				xOf[order[k]] = x + w*float64(pts[order[k]].at-t0)/float64(t1-t0)
			case n > 1:
				xOf[order[k]] = x + w*float64(k-s.from)/float64(n-1)
			default:
				xOf[order[k]] = x + w/2
			}
		}
		if x-lastLabel >= labelEvery {
			anchor := "middle"
			if i == 0 {
				anchor = "start"
			}
			tl.Ticks = append(tl.Ticks, tick{X: x, Label: axisLabel(timed, t0-first, order[s.from]), Anchor: anchor})
			lastLabel = x
		}
		x += w
		if i < len(gaps) {
			l := "+" + duration(gaps[i].len)
			tl.Jumps = append(tl.Jumps, jump{X: x + jumpWidth/2, Label: l, Title: "the clock jumps " + l})
			x += jumpWidth
		}
	}
	if end := float64(plotLeft + plotWidth - 6); end-lastLabel >= labelEvery && len(order) > 1 {
		tl.Ticks = append(tl.Ticks, tick{X: end, Label: axisLabel(timed, last-first, order[len(order)-1]), Anchor: "end"})
	}
	placeJumpLabels(tl.Jumps)
	return xOf
}

// gap is a stretch of time with no step, drawn as a clock jump.
type gap struct {
	after int // index into order of the step before the gap
	len   int64
}

// clockJumps are the gaps that become jumps: the longest maxJumps of at
// least minJump, in the order of time.
func clockJumps(pts []stepPoint, order []int) []gap {
	var gaps []gap
	for k := 1; k < len(order); k++ {
		if d := pts[order[k]].at - pts[order[k-1]].at; d >= minJump {
			gaps = append(gaps, gap{k - 1, d})
		}
	}
	sort.Slice(gaps, func(a, b int) bool { return gaps[a].len > gaps[b].len })
	if len(gaps) > maxJumps {
		gaps = gaps[:maxJumps]
	}
	sort.Slice(gaps, func(a, b int) bool { return gaps[a].after < gaps[b].after })
	return gaps
}

// placeJumpLabels puts the jumps' labels on two rows below the ticks;
// one with no room on either is left to its title.
func placeJumpLabels(jumps []jump) {
	row := [2]float64{-1e9, -1e9}
	for i := range jumps {
		j := &jumps[i]
		room := float64(len(j.Label))*6 + 8
		switch {
		case j.X-row[0] >= room:
			j.Dy, row[0] = 26, j.X
		case j.X-row[1] >= room:
			j.Dy, row[1] = 37, j.X
		default:
			j.Label = ""
		}
	}
}

// axisLabel is a tick's label: the virtual time since the first step, or
// the step's number when the report gives no times.
func axisLabel(timed bool, at int64, index int) string {
	if !timed {
		return fmt.Sprintf("step %d", index+1)
	}
	return "t+" + duration(at)
}

// aggregate puts the steps into bins of binWidth per lane and row, each
// coloured by its worst step, and joins neighbouring bins of one colour
// into one mark, so that a long run of answered steps costs one element.
func aggregate(pts []stepPoint, xOf []float64, laneOf map[uint64]int, lanes []lane) []mark {
	type binKey struct{ lane, row, col int }
	type bin struct {
		class      string
		first, end int // steps
		counts     map[string]int
	}
	bins := map[binKey]*bin{}
	for i, p := range pts {
		col := int((xOf[i] - plotLeft) / binWidth)
		for r := range rows {
			k := binKey{laneOf[p.conn], r, col}
			b := bins[k]
			if b == nil {
				b = &bin{class: p.class[r], first: p.step, end: p.step, counts: map[string]int{}}
				bins[k] = b
			}
			b.counts[p.class[r]]++
			if severity[p.class[r]] > severity[b.class] {
				b.class = p.class[r]
			}
			b.first, b.end = min(b.first, p.step), max(b.end, p.step)
		}
	}
	keys := make([]binKey, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		ka, kb := keys[a], keys[b]
		if ka.lane != kb.lane {
			return ka.lane < kb.lane
		}
		if ka.row != kb.row {
			return ka.row < kb.row
		}
		return ka.col < kb.col
	})
	var marks []mark
	var run *mark
	var runKey binKey
	var runCounts map[string]int
	var runFirst, runEnd int
	flush := func() {
		if run == nil {
			return
		}
		run.Title = fmt.Sprintf("%s: steps %d to %d: %s", rowName(runKey.row), runFirst, runEnd, countsLabel(runCounts))
		marks = append(marks, *run)
		run = nil
	}
	for _, k := range keys {
		b := bins[k]
		x := float64(plotLeft) + float64(k.col)*binWidth
		if run != nil && runKey.lane == k.lane && runKey.row == k.row && run.Class == b.class && x <= run.X+run.W+binWidth {
			run.W = x + binWidth - run.X
			for c, n := range b.counts {
				runCounts[c] += n
			}
			runFirst, runEnd = min(runFirst, b.first), max(runEnd, b.end)
			continue
		}
		flush()
		run = &mark{X: x, Y: float64(lanes[k.lane].RowY[k.row]) + 1, W: binWidth, H: rowHeight - 2, Class: b.class}
		runKey, runFirst, runEnd = k, b.first, b.end
		runCounts = map[string]int{}
		for c, n := range b.counts {
			runCounts[c] = n
		}
	}
	flush()
	return marks
}

// countsLabel is "98 ok, 2 error", worst first.
func countsLabel(counts map[string]int) string {
	classes := make([]string, 0, len(counts))
	for c := range counts {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(a, b int) bool { return severity[classes[a]] > severity[classes[b]] })
	s := ""
	for i, c := range classes {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", counts[c], classLabel[c])
	}
	return s
}

// classLabel names a mark's class for a person.
var classLabel = map[string]string{"notrun": "not run", "ok": "ok", "error": "error", "differs": "answer differs", "hang": "hang", "crash": "crash"}

// outcomeClass is a mark's class for an outcome.
func outcomeClass(o kavach.Outcome, ran bool) string {
	if !ran {
		return "notrun"
	}
	switch o.Kind {
	case kavach.OK, kavach.Error, kavach.Crash, kavach.Hang:
		return string(o.Kind)
	}
	return "notrun"
}

func outcomeOr(o kavach.Outcome, ran bool) string {
	if !ran {
		return "not run"
	}
	return o.String()
}

func atLabel(timed bool, at int64) string {
	if !timed {
		return ""
	}
	return ", t+" + duration(at)
}

// duration is a virtual time for a person: "850 µs", "12 ms", "2.3 s",
// "1h4m".
func duration(us int64) string {
	d := time.Duration(us) * time.Microsecond
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", us)
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// noiseOf is the report's noise fields as a replay.Noise.
func noiseOf(fields []replay.NoiseField) replay.Noise {
	n := replay.Noise{}
	for _, f := range fields {
		if n[f.Step] == nil {
			n[f.Step] = map[string]bool{}
		}
		n[f.Step][f.Path] = true
	}
	return n
}
