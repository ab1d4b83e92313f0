package realtime

import (
	"net/http/httptest"
	"testing"
)

type seqEvent struct{}

func (seqEvent) StreamID() string                      { return "w" }
func (seqEvent) Offset() int64                         { return 7 }
func (seqEvent) AppendJSON(buf []byte) ([]byte, error) { return append(buf, `{"x":1}`...), nil }

func TestEventFrame(t *testing.T) {
	b, err := eventFrame([]byte(`"workflow:w"`), seqEvent{})
	if want := `{"type":"event","topic":"workflow:w","offset":7,"data":{"x":1}}`; err != nil || string(b) != want {
		t.Fatalf("%s %v, want %s", b, err, want)
	}
}

func TestWebSocketBearer(t *testing.T) {
	r := httptest.NewRequest("GET", "/api/v1/realtime", nil)
	r.Header.Set("Sec-WebSocket-Protocol", "shopmind.realtime.v1, bearer.abc.def")
	if got := Bearer(r); got != "" {
		t.Fatalf("not an upgrade: %q", got)
	}
	r.Header.Set("Upgrade", "websocket")
	if got := Bearer(r); got != "abc.def" {
		t.Fatalf("token %q", got)
	}
	r.Header.Set("Sec-WebSocket-Protocol", "shopmind.realtime.v1")
	if got := Bearer(r); got != "" {
		t.Fatalf("no token offered: %q", got)
	}
}
