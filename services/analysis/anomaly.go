package analysis

import (
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/notifyclient"
)

// Anomaly check defaults and bounds.
const (
	defaultBaselineDays = 28
	defaultThreshold    = 3.0
	minBaselinePoints   = 7
	// constantBaselineJump: with a constant baseline (stddev 0), a value this far from it,
	// relative to it, is an anomaly.
	constantBaselineJump = 0.5
)

// anomalyStats is the check of one metric's series: baseline values (oldest first) and the
// day's value (nil: no data that day).
type anomalyStats struct {
	mean, stddev, z float64
	points          int
	anomaly         bool
	direction       string
}

// checkSeries computes the baseline statistics and decides. Baseline days without data are
// zeros when zeroFill (sums and counts), else left out; a day without data is 0 when
// zeroFill, else no anomaly can be found.
func checkSeries(baseline []*float64, day *float64, zeroFill bool, threshold float64) anomalyStats {
	var vals []float64
	for _, v := range baseline {
		switch {
		case v != nil:
			vals = append(vals, *v)
		case zeroFill:
			vals = append(vals, 0)
		}
	}
	st := anomalyStats{points: len(vals)}
	if len(vals) == 0 {
		return st
	}
	for _, v := range vals {
		st.mean += v
	}
	st.mean /= float64(len(vals))
	if len(vals) > 1 {
		var ss float64
		for _, v := range vals {
			ss += (v - st.mean) * (v - st.mean)
		}
		st.stddev = math.Sqrt(ss / float64(len(vals)-1))
	}
	value := 0.0
	if day != nil {
		value = *day
	} else if !zeroFill {
		return st
	}
	if st.points < minBaselinePoints {
		return st
	}
	if st.stddev > 0 {
		st.z = (value - st.mean) / st.stddev
		st.anomaly = math.Abs(st.z) > threshold
	} else {
		st.anomaly = math.Abs(value-st.mean) > constantBaselineJump*math.Abs(st.mean) || (st.mean == 0 && value != 0)
	}
	if st.anomaly {
		st.direction = "up"
		if value < st.mean {
			st.direction = "down"
		}
	}
	return st
}

// zeroFilled: a day without rows is a zero for sums and counts (derived sum, count,
// count_distinct; order metrics, which sum amounts or count orders).
func zeroFilled(m *metricRecord) bool {
	switch c := m.Config.GetKind().(type) {
	case *analysisv1.MetricConfig_Derived:
		switch c.Derived.GetAggregation() {
		case "sum", "count", "count_distinct":
			return true
		}
	case *analysisv1.MetricConfig_Order:
		return true
	}
	return false
}

func (s *queryServer) CheckAnomalies(ctx context.Context, req *analysisv1.CheckAnomaliesRequest) (*analysisv1.CheckAnomaliesResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	dayT := time.Now().UTC().AddDate(0, 0, -1)
	if req.Day != nil {
		dayT = req.GetDay().AsTime().UTC()
	}
	day := time.Date(dayT.Year(), dayT.Month(), dayT.Day(), 0, 0, 0, 0, time.UTC)
	baselineDays := int(defaultBaselineDays)
	if req.BaselineDays != nil {
		baselineDays = int(req.GetBaselineDays())
	}
	threshold := defaultThreshold
	if req.Threshold != nil {
		threshold = req.GetThreshold()
	}
	start := day.AddDate(0, 0, -baselineDays)
	q := &analysisv1.PreviewQueryRequest{MetricNames: req.GetMetricNames(), TimeGranularity: "day",
		StartTime: timestamppb.New(start), EndTime: timestamppb.New(day.AddDate(0, 0, 1)), Filters: req.GetFilters()}
	limit := baselineDays + 1
	live, err := s.metrics.live(ctx, s.metrics.pool, id.TenantID) // once: the query and the zero-fill rule
	if err != nil {
		return nil, err
	}
	c, err := s.compileLive(ctx, id, live, q, limit+1)
	if err != nil {
		return nil, err
	}
	res, err := s.store.Query(ctx, c.SQL, c.Args, warehouse.QueryOptions{MaxRows: limit + 1, Timeout: s.timeout})
	if err != nil {
		return nil, err
	}
	records := map[string]*metricRecord{}
	for _, m := range live {
		records[m.Name] = m
	}
	// series[metric][day index]: day index 0 is start, baselineDays is the day checked.
	series := make([][]*float64, len(req.GetMetricNames()))
	for i := range series {
		series[i] = make([]*float64, baselineDays+1)
	}
	for _, row := range res.Rows {
		t, ok := row[0].(time.Time)
		if !ok {
			continue
		}
		idx := int(t.UTC().Sub(start).Hours() / 24)
		if idx < 0 || idx > baselineDays {
			continue
		}
		for m := range series {
			if v, ok := number(row[1+m]); ok {
				series[m][idx] = &v
			}
		}
	}
	out := &analysisv1.CheckAnomaliesResponse{Day: timestamppb.New(day)}
	for m, name := range req.GetMetricNames() {
		st := checkSeries(series[m][:baselineDays], series[m][baselineDays], zeroFilled(records[name]), threshold)
		value := 0.0
		if v := series[m][baselineDays]; v != nil {
			value = *v
		}
		ma := &analysisv1.MetricAnomaly{MetricName: name, Value: value, BaselineMean: st.mean, BaselineStddev: st.stddev,
			BaselineDays: int32(st.points), ZScore: st.z, Anomaly: st.anomaly, Direction: st.direction}
		out.Metrics = append(out.Metrics, ma)
		if st.anomaly && s.publishAnomaly(ctx, records[name], day, ma, threshold) {
			out.Notified++
		}
	}
	return out, nil
}

// publishAnomaly sends the metric_alert notification of an anomaly, once per metric and day.
func (s *queryServer) publishAnomaly(ctx context.Context, m *metricRecord, day time.Time, a *analysisv1.MetricAnomaly, threshold float64) bool {
	level := notifyclient.LevelWarning
	if math.Abs(a.ZScore) >= 2*threshold {
		level = notifyclient.LevelError
	}
	display := a.MetricName
	if m != nil && m.DisplayName != "" {
		display = m.DisplayName
	}
	dir := "above"
	if a.Direction == "down" {
		dir = "below"
	}
	return s.notify.Publish(ctx, notifyclient.Notification{Type: "metric_alert", Level: level, Source: "analysis",
		Title: fmt.Sprintf("%s on %s is unusually %s: %.2f", display, day.Format("2006-01-02"), map[string]string{"up": "high", "down": "low"}[a.Direction], a.Value),
		Content: fmt.Sprintf("%s (%s) was %.2f on %s, %s its mean of %.2f over the %d days before (standard deviation %.2f, z-score %.1f).",
			display, a.MetricName, a.Value, day.Format("2006-01-02"), dir, a.BaselineMean, a.BaselineDays, a.BaselineStddev, a.ZScore),
		DedupKey: "metric_alert:" + a.MetricName + ":" + day.Format("2006-01-02")})
}

// number reads a metric cell: int64 or float64; nil and others are no value.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case int64:
		return float64(x), true
	}
	return 0, false
}
