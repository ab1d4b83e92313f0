package analysis

import (
	"math"
	"testing"
)

func fp(v float64) *float64 { return &v }

func series(vals ...float64) []*float64 {
	out := make([]*float64, len(vals))
	for i := range vals {
		out[i] = fp(vals[i])
	}
	return out
}

func TestCheckSeries(t *testing.T) {
	base := series(100, 102, 98, 101, 99, 100, 103, 97, 100, 100)
	spike := checkSeries(base, fp(150), true, 3)
	if !spike.anomaly || spike.direction != "up" || spike.points != 10 || math.Abs(spike.mean-100) > 1e-9 || spike.z < 3 {
		t.Fatalf("spike: %+v", spike)
	}
	if drop := checkSeries(base, fp(60), true, 3); !drop.anomaly || drop.direction != "down" {
		t.Fatalf("drop: %+v", drop)
	}
	if normal := checkSeries(base, fp(103), true, 3); normal.anomaly || normal.direction != "" {
		t.Fatalf("normal day: %+v", normal)
	}
	// A day without data: a zero for sums (an anomaly here), nothing to judge otherwise.
	if missing := checkSeries(base, nil, true, 3); !missing.anomaly || missing.direction != "down" {
		t.Fatalf("missing day, zero-filled: %+v", missing)
	}
	if missing := checkSeries(base, nil, false, 3); missing.anomaly {
		t.Fatalf("missing day, not zero-filled: %+v", missing)
	}
	// Too short a baseline never flags.
	if short := checkSeries(series(1, 1, 1), fp(1000), true, 3); short.anomaly {
		t.Fatalf("short baseline: %+v", short)
	}
	// Gaps: zeros for sums, left out otherwise.
	gappy := append(series(10, 10, 10, 10, 10, 10, 10), nil, nil)
	if z := checkSeries(gappy, fp(10), true, 3); z.points != 9 {
		t.Fatalf("zero-filled gaps: %+v", z)
	}
	if z := checkSeries(gappy, fp(10), false, 3); z.points != 7 || z.stddev != 0 || z.anomaly {
		t.Fatalf("gaps left out: %+v", z)
	}
	// A constant baseline: more than 50% away is an anomaly.
	if c := checkSeries(series(10, 10, 10, 10, 10, 10, 10), fp(16), false, 3); !c.anomaly || c.z != 0 {
		t.Fatalf("constant baseline jump: %+v", c)
	}
	if c := checkSeries(series(10, 10, 10, 10, 10, 10, 10), fp(14), false, 3); c.anomaly {
		t.Fatalf("constant baseline small change: %+v", c)
	}
}
