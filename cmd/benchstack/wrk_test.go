package main

import "testing"

const wrkSample = `Running 2s test @ http://127.0.0.1:40613/tenant/api/v1/tenant/auth/info
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     6.12ms    9.81ms 161.99ms   96.31%
    Req/Sec     4.70k   512.33     5.12k    85.00%
  Latency Distribution
     50%  5.79ms
     75%  6.40ms
     90%  7.30ms
     99%  1.20s
  9354 requests in 2.00s, 12.98MB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 4
Requests/sec:   4677.12
Transfer/sec:      6.49MB
`

func TestParseWrk(t *testing.T) {
	l, err := parseWrk(wrkSample)
	if err != nil {
		t.Fatal(err)
	}
	if l.RPS != 4677.12 || l.P50 != 5.79 || l.P99 != 1200 || l.Errors != 7 {
		t.Fatalf("parsed %+v", l)
	}
	if _, err := parseWrk("Requests/sec: 10\n"); err == nil {
		t.Fatal("an output without a latency distribution must be refused")
	}
}

func TestMedianKeepsOneRunTogether(t *testing.T) {
	m := median([]load{{RPS: 3, P99: 30}, {RPS: 1, P99: 10}, {RPS: 2, P99: 20}})
	if m.RPS != 2 || m.P99 != 20 {
		t.Fatalf("median %+v", m)
	}
}
