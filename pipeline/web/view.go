package web

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/floedata/floe/pipeline"
)

// view is what the page template renders; every field is text or
// coordinates computed here.
type view struct {
	Pipeline     string
	At           string
	Refresh      int // seconds
	Sampled      bool
	CatalogError string
	Warnings     []string
	Counts       []count
	Graph        graph
	Transforms   []transformView
	Recent       []runView
}

type count struct {
	Label, Class string
	N            int
}

type transformView struct {
	Name, Type           string
	Class, Freshness     string
	Lag, Targets         string
	LastRun, LastOutcome string
	OutcomeClass         string
	LastError            string
	LastBuild            string
	LagPlot, RowsPlot    plot
	Outputs              []outputView
}

type outputView struct {
	Table, Snapshot, BuiltAt, Lag, EndToEnd, Stalest string
	Class, Freshness, Note                           string
	Exists                                           bool
	Inputs                                           []inputView
}

type inputView struct {
	Name, Table, Upstream, Watermark, WatermarkAt string
	Head, HeadAt, Behind, RowsBehind, Lag         string
	PendingSince                                  string
}

type runView struct {
	Start, Transform, Outcome, Class, Duration string
	Rows, Bytes, Error                         string
}

// Freshness classes of the page (colors in style.css).
const (
	classOK      = "fresh-ok"
	classWarn    = "fresh-warn"
	classError   = "fresh-error"
	classUnknown = "fresh-unknown"
	classNone    = "fresh-none"
	classSource  = "source"
)

func freshClass(level string) string {
	switch level {
	case pipeline.FreshOK:
		return classOK
	case pipeline.FreshWarn:
		return classWarn
	case pipeline.FreshError:
		return classError
	case pipeline.FreshUnknown:
		return classUnknown
	}
	return classNone
}

// rank orders levels from best to worst, for a transform's worst output.
func rank(level string) int {
	switch level {
	case pipeline.FreshNone:
		return 0
	case pipeline.FreshOK:
		return 1
	case pipeline.FreshUnknown:
		return 2
	case pipeline.FreshWarn:
		return 3
	}
	return 4
}

func outcomeClass(kind string) string {
	switch kind {
	case pipeline.OutcomeError, pipeline.OutcomeBlocked:
		return "outcome-failed"
	case pipeline.OutcomeIncremental, pipeline.OutcomeFull:
		return "outcome-built"
	}
	return "outcome-other"
}

const timeLayout = "2006-01-02 15:04:05Z"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format(timeLayout)
}

// Duration renders a duration for people: 42s, 5m10s, 2h50m, 3d4h.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", s)
	case d < time.Hour && s == 0:
		return fmt.Sprintf("%dm", m)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", m, s)
	case d < 48*time.Hour && m == 0:
		return fmt.Sprintf("%dh", h)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", h, m)
	case h%24 == 0:
		return fmt.Sprintf("%dd", h/24)
	}
	return fmt.Sprintf("%dd%dh", h/24, h%24)
}

func fmtLag(d *time.Duration) string {
	if d == nil {
		return "unknown"
	}
	return Duration(*d)
}

func fmtCount(n *int64) string {
	if n == nil {
		return "unknown"
	}
	return strconv.FormatInt(*n, 10)
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func targets(s *pipeline.Step) string {
	var parts []string
	if s.WarnAfter > 0 {
		parts = append(parts, "warn after "+Duration(s.WarnAfter))
	}
	if s.ErrorAfter > 0 {
		parts = append(parts, "error after "+Duration(s.ErrorAfter))
	}
	if s.TargetLag > 0 {
		parts = append(parts, "target lag "+Duration(s.TargetLag))
	}
	if len(parts) == 0 {
		return "no freshness target"
	}
	return strings.Join(parts, ", ")
}

// build makes the page's view of a report (rep nil: not sampled yet).
func build(p *pipeline.Pipeline, rep *pipeline.Report, refresh time.Duration) view {
	v := view{Pipeline: p.Name, Refresh: max(int(refresh.Seconds()), 1)}
	if rep == nil {
		v.Graph = layout(p, nil)
		v.Refresh = 2
		return v
	}
	v.Sampled = true
	v.At = fmtTime(rep.At)
	v.CatalogError = rep.CatalogError
	if rep.History != nil {
		v.Warnings = rep.History.Warnings
	}
	byStep := map[string][]pipeline.OutputStatus{}
	for _, o := range rep.Outputs {
		byStep[o.Transform] = append(byStep[o.Transform], o)
	}
	counts := map[string]int{}
	for _, s := range p.Steps {
		tv := viewTransform(s, byStep[s.Name], rep)
		counts[tv.Freshness]++
		v.Transforms = append(v.Transforms, tv)
	}
	for _, c := range []struct{ level, label string }{
		{pipeline.FreshError, "error"}, {pipeline.FreshWarn, "warn"}, {pipeline.FreshUnknown, "unknown"},
		{pipeline.FreshOK, "ok"}, {pipeline.FreshNone, "no target"},
	} {
		if counts[c.level] > 0 {
			v.Counts = append(v.Counts, count{Label: c.label, Class: freshClass(c.level), N: counts[c.level]})
		}
	}
	v.Graph = layout(p, rep)
	for _, r := range rep.History.Recent(30) {
		rv := runView{Start: fmtTime(r.Start), Transform: r.Transform, Outcome: r.Outcome, Class: outcomeClass(r.Outcome),
			Duration: took(r.End.Sub(r.Start)), Error: r.Error}
		if r.Repeat > 1 {
			rv.Outcome = fmt.Sprintf("%s ×%d", r.Outcome, r.Repeat)
			rv.Duration = "until " + fmtTime(r.End)
		}
		if r.Built() {
			rv.Rows = fmt.Sprintf("+%d −%d", r.RowsAdded, r.RowsRemoved)
			rv.Bytes = fmtBytes(r.BytesRead) + " / " + fmtBytes(r.BytesWritten)
		}
		v.Recent = append(v.Recent, rv)
	}
	return v
}

func viewTransform(s *pipeline.Step, outs []pipeline.OutputStatus, rep *pipeline.Report) transformView {
	tv := transformView{Name: s.Name, Type: s.Type, Targets: targets(s), Freshness: pipeline.FreshNone}
	var worstLag *time.Duration
	for _, o := range outs {
		if rank(o.Freshness) > rank(tv.Freshness) {
			tv.Freshness = o.Freshness
		}
		lag := o.EndToEndLag
		if lag == nil {
			lag = o.Lag
		}
		if lag != nil && (worstLag == nil || *lag > *worstLag) {
			worstLag = lag
		}
		ov := outputView{Table: o.Output, Exists: o.Exists, Lag: fmtLag(o.Lag), EndToEnd: fmtLag(o.EndToEndLag), Stalest: o.Stalest,
			Class: freshClass(o.Freshness), Freshness: or(o.Freshness, "no target"), Note: o.Note, Snapshot: "–", BuiltAt: fmtTime(o.BuiltAt)}
		if o.SnapshotID != 0 {
			ov.Snapshot = strconv.FormatInt(o.SnapshotID, 10)
		}
		for _, in := range o.Inputs {
			ov.Inputs = append(ov.Inputs, inputView{Name: in.Name, Table: in.Table, Upstream: in.Upstream,
				Watermark: or(in.Watermark, "none"), WatermarkAt: fmtTime(in.WatermarkAt), Head: or(in.Head, "none"),
				HeadAt: fmtTime(in.HeadAt), Behind: fmtCount(in.Behind), RowsBehind: fmtCount(in.RowsBehind), Lag: fmtLag(in.Lag),
				PendingSince: fmtTime(in.PendingSince)})
		}
		tv.Outputs = append(tv.Outputs, ov)
	}
	if len(outs) == 0 {
		tv.Freshness = pipeline.Level(nil, s.WarnAfter, s.ErrorAfter)
	}
	tv.Class = freshClass(tv.Freshness)
	tv.Lag = fmtLag(worstLag)
	runs := rep.History.Runs(s.Name)
	if sum, ok := rep.History.Summaries()[s.Name]; ok {
		tv.LastRun, tv.LastOutcome, tv.OutcomeClass = fmtTime(sum.LastRun), sum.LastOutcome, outcomeClass(sum.LastOutcome)
		if sum.LastOutcome == pipeline.OutcomeError || sum.LastOutcome == pipeline.OutcomeBlocked {
			tv.LastError = sum.LastError
		}
		if b := sum.LastBuild; b != nil {
			tv.LastBuild = fmt.Sprintf("%s (%s, +%d −%d rows)", fmtTime(b.Start), b.Outcome, b.RowsAdded, b.RowsRemoved)
		}
	}
	tv.LagPlot = lagPlot(runs, rep.At, worstLag, s)
	tv.RowsPlot = rowsPlot(runs)
	return tv
}

// graph is the pipeline drawn as boxes and arrows.
type graph struct {
	Width, Height int
	Nodes         []node
	Edges         []edge
}

type node struct {
	ID, Kind, Class   string // ID is "table:ns.t" or "transform:name"
	Label, Sub, Title string
	X, Y, W, H        int
	TX, TY, SY        int // text positions
	Failed            bool
}

type edge struct {
	From, To string
	Path     string
}

const (
	nodeW, nodeH = 180, 46
	colW, rowH   = 230, 70
	pad          = 16
)

// layout places sources, transforms and outputs in columns by depth: a
// transform one column right of its inputs, its outputs one right of it.
func layout(p *pipeline.Pipeline, rep *pipeline.Report) graph {
	writer := map[string]*pipeline.Step{}
	for _, s := range p.Steps {
		for _, d := range s.Destinations {
			writer[key(d)] = s
		}
	}
	status := map[string]pipeline.OutputStatus{}
	inputs := map[string][]pipeline.InputStatus{} // table -> its statuses as an input
	failed := map[string]bool{}
	if rep != nil {
		for _, o := range rep.Outputs {
			status[key(o.Output)] = o
			for _, in := range o.Inputs {
				inputs[key(in.Table)] = append(inputs[key(in.Table)], in)
			}
		}
		for name, sum := range rep.History.Summaries() {
			failed[name] = sum.LastOutcome == pipeline.OutcomeError || sum.LastOutcome == pipeline.OutcomeBlocked
		}
	}
	col := map[string]int{}
	var colOf func(s *pipeline.Step) int
	colOf = func(s *pipeline.Step) int {
		id := "transform:" + s.Name
		if c, ok := col[id]; ok {
			return c
		}
		col[id] = 1 // guards cycles, which pipelines do not have
		c := 1
		for _, src := range s.Sources {
			if w := writer[key(src)]; w != nil {
				c = max(c, colOf(w)+2)
			}
		}
		col[id] = c
		return c
	}
	var order []string
	nodes := map[string]*node{}
	add := func(id string, n node) {
		if _, ok := nodes[id]; ok {
			return
		}
		n.ID = id
		nodes[id] = &n
		order = append(order, id)
	}
	var edges []edge
	for _, s := range p.Steps {
		c := colOf(s)
		for _, src := range s.Sources {
			id := "table:" + key(src)
			if w := writer[key(src)]; w == nil {
				n := node{Kind: "source", Label: src, Sub: "source", Class: classSource}
				if rep != nil {
					switch sourceState(inputs[key(src)], rep) {
					case "missing":
						n.Class, n.Sub = classUnknown, "missing"
					case "unreadable":
						n.Class, n.Sub = classUnknown, "unreachable"
					}
				}
				n.X = 0
				add(id, n)
			}
			edges = append(edges, edge{From: id, To: "transform:" + s.Name})
		}
		tn := node{Kind: "transform", Label: s.Name, Sub: s.Type, Class: classNone, Failed: failed[s.Name]}
		worst := pipeline.FreshNone
		if rep != nil {
			for _, d := range s.Destinations {
				if o, ok := status[key(d)]; ok && rank(o.Freshness) > rank(worst) {
					worst = o.Freshness
				}
			}
			tn.Class = freshClass(worst)
		}
		if tn.Failed {
			tn.Sub = s.Type + " · last run failed"
		}
		tn.X = c
		add("transform:"+s.Name, tn)
		for _, d := range s.Destinations {
			on := node{Kind: "output", Label: d, Sub: "output", Class: classNone, X: c + 1}
			if o, ok := status[key(d)]; ok {
				on.Class = freshClass(o.Freshness)
				lag := o.EndToEndLag
				if lag == nil {
					lag = o.Lag
				}
				on.Sub = "lag " + fmtLag(lag)
				if !o.Exists {
					on.Sub = "missing"
				}
			}
			add("table:"+key(d), on)
			edges = append(edges, edge{From: "transform:" + s.Name, To: "table:" + key(d)})
		}
	}
	// Rows within each column, in order of appearance.
	rows := map[int]int{}
	g := graph{}
	for _, id := range order {
		n := nodes[id]
		c := n.X
		n.X = pad + c*colW
		n.Y = pad + rows[c]*rowH
		rows[c]++
		n.W, n.H = nodeW, nodeH
		n.TX, n.TY, n.SY = n.X+10, n.Y+19, n.Y+36
		n.Title = n.Label + " (" + n.Sub + ")"
		n.Label = clip(n.Label, 24)
		g.Width = max(g.Width, n.X+n.W+pad)
		g.Height = max(g.Height, n.Y+n.H+pad)
		g.Nodes = append(g.Nodes, *n)
	}
	for _, e := range edges {
		a, b := nodes[e.From], nodes[e.To]
		x1, y1 := a.X+a.W, a.Y+a.H/2
		x2, y2 := b.X-6, b.Y+b.H/2
		mx := (x1 + x2) / 2
		e.Path = fmt.Sprintf("M%d %d C%d %d, %d %d, %d %d", x1, y1, mx, y1, mx, y2, x2, y2)
		g.Edges = append(g.Edges, e)
	}
	return g
}

// sourceState says whether a source table could not be read: "missing"
// (it does not exist), "unreadable" (it or the catalog failed), or "".
func sourceState(ins []pipeline.InputStatus, rep *pipeline.Report) string {
	if rep.CatalogError != "" && len(ins) == 0 {
		return "unreadable"
	}
	for _, in := range ins {
		switch {
		case in.Missing:
			return "missing"
		case in.Unreadable:
			return "unreadable"
		}
	}
	return ""
}

func key(name string) string { return strings.ReplaceAll(name, "`", "") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// plot is an SVG chart: points joined by a line, or bars.
type plot struct {
	Width, Height int
	Title, Empty  string
	Line          string // polyline points
	Points        []point
	Bars          []bar
	XTicks        []tick
	YTicks        []tick
	Rules         []rule // threshold lines
	Left, Bottom  int    // the plot area's left and bottom edges
	Right, Top    int
}

type point struct {
	X, Y  float64
	Title string
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type tick struct {
	X, Y   float64
	Label  string
	Anchor string // text-anchor ("" = middle)
}

type rule struct {
	Y     float64
	Class string
	Label string
}

const (
	plotW, plotH = 560, 170
	plotLeft     = 60
	plotRight    = plotW - 12
	plotTop      = 12
	plotBottom   = plotH - 26
)

func newPlot(title string) plot {
	return plot{Width: plotW, Height: plotH, Title: title, Left: plotLeft, Bottom: plotBottom, Right: plotRight, Top: plotTop}
}

// lagPlot plots the transform's end-to-end lag: at the start and end of
// each recorded run, and now.
func lagPlot(runs []pipeline.RunRecord, now time.Time, current *time.Duration, s *pipeline.Step) plot {
	pl := newPlot("lag over time")
	type sample struct {
		at  time.Time
		lag float64
	}
	var ss []sample
	for _, r := range runs {
		if r.LagBefore != nil {
			ss = append(ss, sample{r.Start, *r.LagBefore})
		}
		if r.LagAfter != nil {
			ss = append(ss, sample{r.End, *r.LagAfter})
		}
	}
	if current != nil && !now.IsZero() {
		ss = append(ss, sample{now, current.Seconds()})
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].at.Before(ss[j].at) })
	if len(ss) == 0 {
		pl.Empty = "no lag measured yet"
		return pl
	}
	t0, t1 := ss[0].at, ss[len(ss)-1].at
	if !t1.After(t0) {
		t0, t1 = t0.Add(-time.Minute), t1.Add(time.Minute)
	}
	top := 0.0
	for _, x := range ss {
		top = math.Max(top, x.lag)
	}
	for _, th := range []time.Duration{s.WarnAfter, s.ErrorAfter} {
		top = math.Max(top, th.Seconds())
	}
	top = niceDuration(math.Max(top*1.1, 1))
	xOf := func(t time.Time) float64 {
		return plotLeft + float64(t.Sub(t0))/float64(t1.Sub(t0))*(plotRight-plotLeft)
	}
	yOf := func(v float64) float64 { return plotBottom - v/top*(plotBottom-plotTop) }
	var line []string
	for _, x := range ss {
		px, py := xOf(x.at), yOf(x.lag)
		line = append(line, fmt.Sprintf("%.1f,%.1f", px, py))
		pl.Points = append(pl.Points, point{X: px, Y: py, Title: fmt.Sprintf("%s: lag %s", fmtTime(x.at), Duration(time.Duration(x.lag*float64(time.Second))))})
	}
	pl.Line = strings.Join(line, " ")
	for _, f := range []float64{0, 0.5, 1} {
		pl.YTicks = append(pl.YTicks, tick{X: plotLeft - 6, Y: yOf(top * f), Label: Duration(time.Duration(top * f * float64(time.Second)))})
	}
	pl.XTicks = timeTicks(t0, t1, xOf)
	if s.WarnAfter > 0 {
		pl.Rules = append(pl.Rules, rule{Y: yOf(s.WarnAfter.Seconds()), Class: "rule-warn", Label: "warn " + Duration(s.WarnAfter)})
	}
	if s.ErrorAfter > 0 {
		pl.Rules = append(pl.Rules, rule{Y: yOf(s.ErrorAfter.Seconds()), Class: "rule-error", Label: "error " + Duration(s.ErrorAfter)})
	}
	return pl
}

// rowsPlot plots the rows each recorded build added (up) and removed
// (stacked on top, another color), the last 60 builds.
func rowsPlot(runs []pipeline.RunRecord) plot {
	pl := newPlot("rows per build")
	var builds []pipeline.RunRecord
	for _, r := range runs {
		if r.Built() {
			builds = append(builds, r)
		}
	}
	if len(builds) > 60 {
		builds = builds[len(builds)-60:]
	}
	if len(builds) == 0 {
		pl.Empty = "no build recorded yet"
		return pl
	}
	top := 0.0
	for _, b := range builds {
		top = math.Max(top, float64(b.RowsAdded+b.RowsRemoved))
	}
	top = niceCeil(math.Max(top, 1))
	slot := float64(plotRight-plotLeft) / float64(len(builds))
	w := math.Max(math.Min(slot*0.7, 40), 1)
	yOf := func(v float64) float64 { return plotBottom - v/top*(plotBottom-plotTop) }
	for i, b := range builds {
		x := plotLeft + slot*float64(i) + (slot-w)/2
		title := fmt.Sprintf("%s (%s): +%d −%d rows", fmtTime(b.Start), b.Outcome, b.RowsAdded, b.RowsRemoved)
		added := float64(b.RowsAdded)
		pl.Bars = append(pl.Bars, bar{X: x, Y: yOf(added), W: w, H: plotBottom - yOf(added), Class: "bar-added", Title: title})
		if b.RowsRemoved > 0 {
			y := yOf(added + float64(b.RowsRemoved))
			pl.Bars = append(pl.Bars, bar{X: x, Y: y, W: w, H: yOf(added) - y, Class: "bar-removed", Title: title})
		}
		// A point per build too, so that a build of 0 rows shows.
		pl.Points = append(pl.Points, point{X: x + w/2, Y: yOf(added + float64(b.RowsRemoved)), Title: title})
	}
	fracs := []float64{0, 0.5, 1}
	if top < 2 {
		fracs = []float64{0, 1}
	}
	for _, f := range fracs {
		pl.YTicks = append(pl.YTicks, tick{X: plotLeft - 6, Y: yOf(top * f), Label: strconv.FormatFloat(math.Round(top*f), 'f', -1, 64)})
	}
	first, last := builds[0].Start, builds[len(builds)-1].Start
	pl.XTicks = []tick{{X: plotLeft, Y: plotBottom + 16, Label: fmtClock(first), Anchor: "start"}}
	if len(builds) > 1 {
		pl.XTicks = append(pl.XTicks, tick{X: plotRight, Y: plotBottom + 16, Label: fmtClock(last), Anchor: "end"})
	}
	return pl
}

func fmtClock(t time.Time) string {
	return t.UTC().Format("01-02 15:04:05")
}

// took renders a run's duration: milliseconds under a second.
func took(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return Duration(d)
}

func timeTicks(t0, t1 time.Time, xOf func(time.Time) float64) []tick {
	mid := t0.Add(t1.Sub(t0) / 2)
	return []tick{{X: xOf(t0), Y: plotBottom + 16, Label: fmtClock(t0), Anchor: "start"}, {X: xOf(mid), Y: plotBottom + 16, Label: fmtClock(mid)},
		{X: xOf(t1), Y: plotBottom + 16, Label: fmtClock(t1), Anchor: "end"}}
}

// niceDuration rounds seconds up to a duration that reads well on an
// axis.
func niceDuration(v float64) float64 {
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 96 * time.Hour, 168 * time.Hour} {
		if d.Seconds() >= v {
			return d.Seconds()
		}
	}
	return math.Ceil(v/86400/7) * 86400 * 7
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*exp >= v {
			return m * exp
		}
	}
	return 10 * exp
}
