// Package charts turns a semantic-layer preview into a visualization event (line, bar or
// table; Build) and reads its cells (View); it also holds the number formats of the
// answers (FormatNumber, FormatValue).
package charts

import (
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// MaxVisualizationRows bounds the rows of a visualization event (the contract's limit).
const MaxVisualizationRows = 10000

// Chart types.
const (
	ChartLine  = "line"
	ChartBar   = "bar"
	ChartTable = "table"
)

// NumberOf reads a numeric cell (numbers, or decimals sent as strings).
func NumberOf(v *structpb.Value) (float64, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return k.NumberValue, true
	case *structpb.Value_StringValue:
		f, err := strconv.ParseFloat(strings.TrimSpace(k.StringValue), 64)
		return f, err == nil
	}
	return 0, false
}

// TextOf reads a cell as text.
func TextOf(v *structpb.Value) string {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return k.StringValue
	case *structpb.Value_NumberValue:
		if k.NumberValue == math.Trunc(k.NumberValue) && math.Abs(k.NumberValue) < 1e15 {
			return strconv.FormatInt(int64(k.NumberValue), 10)
		}
		return strconv.FormatFloat(k.NumberValue, 'f', -1, 64)
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(k.BoolValue)
	case *structpb.Value_NullValue, nil:
		return ""
	}
	return ""
}

// View locates the columns of a preview result.
type View struct {
	resp     *analysisv1.PreviewQueryResponse
	timeCol  int
	labelCol int // the dimension column that names a row (a name rather than an id)
	dimCols  []int
	metric   map[string]int
}

// ViewOf locates the time, label, dimension and metric columns of a preview.
func ViewOf(resp *analysisv1.PreviewQueryResponse) View {
	v := View{resp: resp, timeCol: -1, labelCol: -1, metric: map[string]int{}}
	for i, c := range resp.GetColumns() {
		switch c.GetRole() {
		case "time":
			if v.timeCol < 0 {
				v.timeCol = i
			}
		case "dimension":
			v.dimCols = append(v.dimCols, i)
		default:
			v.metric[c.GetName()] = i
		}
	}
	// label: a column named like a name, else a string column, else the last dimension
	best := -1
	for _, pick := range []func(*analysisv1.ResultColumn) bool{
		func(c *analysisv1.ResultColumn) bool {
			n := strings.ToLower(c.GetName())
			return strings.Contains(n, "name") || strings.Contains(n, "label") || strings.Contains(n, "title")
		},
		func(c *analysisv1.ResultColumn) bool { return c.GetType() == "string" },
		func(*analysisv1.ResultColumn) bool { return true },
	} {
		for _, i := range v.dimCols {
			if pick(resp.GetColumns()[i]) {
				best = i
			}
		}
		if best >= 0 {
			break
		}
	}
	v.labelCol = best
	return v
}

// Rows is the number of rows.
func (v View) Rows() int { return len(v.resp.GetRows()) }

// Response is the preview the view reads.
func (v View) Response() *analysisv1.PreviewQueryResponse { return v.resp }

// Value reads a metric of a row.
func (v View) Value(row int, metric string) (float64, bool) {
	i, ok := v.metric[metric]
	rows := v.resp.GetRows()
	if !ok || row >= len(rows) || i >= len(rows[row].GetValues()) {
		return 0, false
	}
	return NumberOf(rows[row].GetValues()[i])
}

// Cell is the text of a cell (a time bucket as its date).
func (v View) Cell(row, col int) string {
	rows := v.resp.GetRows()
	if col < 0 || row >= len(rows) || col >= len(rows[row].GetValues()) {
		return ""
	}
	s := TextOf(rows[row].GetValues()[col])
	if col == v.timeCol && len(s) >= 10 && strings.Contains(s, "T") {
		s = s[:10] // a bucket's date
	}
	return s
}

// Label names a row: its label column, or its time bucket.
func (v View) Label(row int) string {
	if v.labelCol >= 0 {
		if s := v.Cell(row, v.labelCol); s != "" {
			return s
		}
	}
	if v.timeCol >= 0 {
		return v.Cell(row, v.timeCol)
	}
	return ""
}

func valueFormat(m agent.MetricInfo, colType string) string {
	switch {
	case m.Money:
		return "money"
	case colType == "integer" || colType == "int":
		return "integer"
	}
	return "number"
}

// chartFor picks the chart of a result: line for a time series, bar for a split by a
// dimension, table otherwise.
func chartFor(v View) string {
	switch {
	case v.timeCol >= 0:
		return ChartLine
	case v.labelCol >= 0:
		return ChartBar
	}
	return ChartTable
}

// Build charts a preview result. Spec keys: xField (the time or label column),
// xType (time or category), yFields (metric columns), seriesField (the label column of a
// time series split by a dimension), series ([{field, name, format}]), valueFormat
// ({metric: money|integer|number}).
func Build(id, title string, resp *analysisv1.PreviewQueryResponse, metrics map[string]agent.MetricInfo) *chatv2.VisualizationEvent {
	if resp == nil {
		return nil
	}
	v := ViewOf(resp)
	chart := chartFor(v)
	cols := make([]string, len(resp.GetColumns()))
	for i, c := range resp.GetColumns() {
		cols[i] = c.GetName()
	}
	var yFields []any
	series := []any{}
	formats := map[string]any{}
	for _, c := range resp.GetColumns() {
		if c.GetRole() != "measure" && c.GetRole() != "metric" && c.GetRole() != "" {
			continue
		}
		m := metrics[c.GetName()]
		if m.Name == "" {
			m = agent.MetricInfo{Name: c.GetName()}
		}
		f := valueFormat(m, c.GetType())
		yFields = append(yFields, c.GetName())
		formats[c.GetName()] = f
		series = append(series, map[string]any{"field": c.GetName(), "name": m.Label(), "format": f})
	}
	spec := map[string]any{"yFields": yFields, "series": series, "valueFormat": formats}
	switch chart {
	case ChartLine:
		spec["xField"] = cols[v.timeCol]
		spec["xType"] = "time"
		if v.labelCol >= 0 {
			spec["seriesField"] = cols[v.labelCol]
		}
	case ChartBar:
		spec["xField"] = cols[v.labelCol]
		spec["xType"] = "category"
		spec["orientation"] = "vertical"
	}
	sp, _ := structpb.NewStruct(spec)
	rows := resp.GetRows()
	if len(rows) > MaxVisualizationRows {
		rows = rows[:MaxVisualizationRows]
	}
	return &chatv2.VisualizationEvent{Id: id, ChartType: chart, Title: title, Spec: sp, Columns: cols, Rows: rows}
}

// FormatNumber writes v with thousands separators and the given decimals.
func FormatNumber(v float64, decimals int) string {
	neg := v < 0
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// FormatValue writes a metric value: two decimals for money and fractions, none for counts.
func FormatValue(m agent.MetricInfo, v float64) string {
	if m.Money || v != math.Trunc(v) {
		return FormatNumber(v, 2)
	}
	return FormatNumber(v, 0)
}
