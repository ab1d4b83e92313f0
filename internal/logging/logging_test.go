package logging

import (
	"strings"
	"testing"
)

func TestAcceptOrNewID(t *testing.T) {
	for _, ok := range []string{"req-1", "01J9Z3W4K5M6N7P8Q9R0S1T2U3", "a.b_c:d-e", strings.Repeat("x", 64)} {
		if got := AcceptOrNewID(ok); got != ok {
			t.Errorf("%q replaced by %q", ok, got)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 65), "has space", "semi;colon", "ünï", "new\nline"} {
		got := AcceptOrNewID(bad)
		if got == bad || len(got) != 24 || !validID(got) {
			t.Errorf("%q kept or badly replaced: %q", bad, got)
		}
	}
	if AcceptOrNewID("") == AcceptOrNewID("") {
		t.Error("two new ids are equal")
	}
}
