package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// load is one wrk run's figures: requests per second, latency percentiles in milliseconds,
// and the responses that were not 2xx/3xx or failed at the socket.
type load struct {
	RPS, P50, P99 float64
	Errors        int
}

var (
	rpsLine     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	percentLine = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	non2xxLine  = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	socketLine  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func runWrk(ctx context.Context, url, token string, d time.Duration, conns, threads int) (load, error) {
	out, err := exec.CommandContext(ctx, "wrk", "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns),
		"-d"+strconv.Itoa(int(d.Seconds()))+"s", "--latency", "-H", "Authorization: Bearer "+token, url).CombinedOutput()
	if err != nil {
		return load{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	return parseWrk(string(out))
}

func parseWrk(out string) (load, error) {
	var l load
	m := rpsLine.FindStringSubmatch(out)
	if m == nil {
		return l, fmt.Errorf("no Requests/sec in wrk's output: %s", out)
	}
	l.RPS, _ = strconv.ParseFloat(m[1], 64)
	for _, p := range percentLine.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(p[2], 64)
		switch p[3] {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		if p[1] == "50" {
			l.P50 = v
		} else {
			l.P99 = v
		}
	}
	if m := non2xxLine.FindStringSubmatch(out); m != nil {
		l.Errors, _ = strconv.Atoi(m[1])
	}
	if m := socketLine.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			l.Errors += n
		}
	}
	if l.P50 == 0 || l.P99 == 0 {
		return l, fmt.Errorf("no latency distribution in wrk's output: %s", strings.TrimSpace(out))
	}
	return l, nil
}

// median is the run with the median throughput, its latencies with it (so one run's figures
// stay together).
func median(runs []load) load {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b load) int { return int(a.RPS - b.RPS) })
	return s[len(s)/2]
}
