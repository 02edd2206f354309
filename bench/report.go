package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// report is a whole bench run: what it ran on and one section per scenario.
type report struct {
	cfg      benchConfig
	machine  machine
	server   string
	started  time.Time
	elapsed  time.Duration
	sections []*section
}

// section is one scenario's results.
type section struct {
	number int
	title  string
	intro  []string // paragraphs before the tables
	tables []mdTable
	notes  []string // paragraphs after the tables
	plot   *plotSpec
}

type mdTable struct {
	header []string
	rows   [][]string
}

// plotSpec is a figure a section draws; file has no extension.
type plotSpec struct {
	file, alt string
	draw      func() (*plot.Plot, error)
}

func (s *section) table(header ...string) *mdTable {
	s.tables = append(s.tables, mdTable{header: header})
	return &s.tables[len(s.tables)-1]
}

func (t *mdTable) row(cells ...string) { t.rows = append(t.rows, cells) }

// markdown renders the report; plots are linked with the given extension
// ("" leaves them out, for standard output).
func (r *report) markdown(plotExt string) string {
	var b strings.Builder
	c := r.cfg
	mode := "full"
	if c.quick {
		mode = "quick (-quick)"
	}
	fmt.Fprintf(&b, "# dynashard bench results\n\n")
	fmt.Fprintf(&b, "- Run: %s, %s mode", r.started.Format("2006-01-02 15:04 MST"), mode)
	if r.elapsed > 0 {
		fmt.Fprintf(&b, ", %s in all", r.elapsed.Round(time.Second))
	}
	fmt.Fprintf(&b, ".\n- Machine: %s.\n", r.machine)
	fmt.Fprintf(&b, "- Server: %s.\n", r.server)
	fmt.Fprintf(&b, "- Model: every partition-key value gets its own token bucket of %s WCU/s and %s RCU/s "+
		"(DynamoDB: 1,000 and 3,000 per partition, scaled down so that the local server is not the bottleneck), "+
		"holding %s of unused capacity; writes are charged per started KB, reads per started 4 KB (half when eventually consistent); "+
		"a request on a key in debt gets ProvisionedThroughputExceededException, a batch entry comes back unprocessed.\n",
		fig(c.wcu), fig(c.rcu), c.burst)
	if c.scenarios[7] {
		fmt.Fprintf(&b, "- Scenario 7 uses the partition model instead: a provisioned table of %s WCU whose keys share its "+
			"partitions' throughput, at time scale %g (its section states the model).\n", fig(c.partWCU), c.partScale)
	}
	backoff := "the SDK's default backoff"
	if c.backoff > 0 {
		backoff = fmt.Sprintf("full-jitter backoff from %s, capped at 1s", c.backoff)
	}
	fmt.Fprintf(&b, "- Client: aws-sdk-go-v2 standard retryer, %d attempts, no retry quota (ratelimit.None), %s.\n", c.attempts, backoff)
	fmt.Fprintf(&b, "- CPU columns: client = this process (bench, library, SDK and proxy; in scenarios 1, 6 and 7 without the proxy, "+
		"whose CPU is its own column, split by a CPU profile with the proxy's goroutines labelled), in cores; server = the local server's processes, in cores; "+
		"machine = share of all cores busy, every process on the machine counted.\n")
	if c.note != "" {
		fmt.Fprintf(&b, "\n> %s\n", c.note)
	}
	for _, s := range r.sections {
		fmt.Fprintf(&b, "\n## %d. %s\n\n", s.number, s.title)
		for _, p := range s.intro {
			fmt.Fprintf(&b, "%s\n\n", p)
		}
		for _, t := range s.tables {
			writeTable(&b, t)
			b.WriteString("\n")
		}
		for _, p := range s.notes {
			fmt.Fprintf(&b, "%s\n\n", p)
		}
		if s.plot != nil && plotExt != "" {
			fmt.Fprintf(&b, "![%s](%s.%s)\n\n", s.plot.alt, s.plot.file, plotExt)
		}
	}
	return b.String()
}

func writeTable(b *strings.Builder, t mdTable) {
	b.WriteString("| " + strings.Join(t.header, " | ") + " |\n|")
	for range t.header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

// write saves results.md and every section's plot in dir.
func (r *report) write(dir, format string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range r.sections {
		if s.plot == nil {
			continue
		}
		p, err := s.plot.draw()
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.plot.file, err)
		}
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, s.plot.file+"."+format)); err != nil {
			return fmt.Errorf("plot %s: %w", s.plot.file, err)
		}
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.markdown(format)), 0o644)
}

// fig formats a figure without needless decimals.
func fig(v float64) string {
	switch {
	case v == float64(int64(v)) && v < 1e15:
		return fmt.Sprintf("%d", int64(v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func pct(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// newPlot returns a plot with a log2 x axis over the shard counts ns.
func newPlot(title, xLabel, yLabel string, ns []int) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, n := range ns {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// addSeries adds a line with point markers; dashed draws the line dashed
// and without markers.
func addSeries(p *plot.Plot, name string, pts plotter.XYs, color int, dashed bool) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(color)
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.Color = l.Color
	s.Shape = draw.CircleGlyph{}
	s.Radius = vg.Points(3)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}
