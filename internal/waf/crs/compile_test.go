package crs

import (
	"slices"
	"strings"
	"testing"
)

func compiledIDs(stmts []crsStatement) []int {
	var ids []int
	for _, s := range stmts {
		if s.rule && s.id != 0 {
			ids = append(ids, s.id)
		}
	}
	return ids
}

func TestDropDeadRules(t *testing.T) {
	u := crsTXUsage(`SecAction "id:1,phase:1,pass,nolog,setvar:tx.configured=1,setvar:tx.flag=0"`)
	file := `SecRule &TX:never_set "@eq 1" "id:10,phase:2,pass,chain"
    SecRule ARGS "@gt %{tx.never_set}" "t:none,setvar:'tx.x=1'"
SecRule TX:never_set "@rx ." "id:11,phase:2,block"
SecRule &TX:configured "@eq 1" "id:12,phase:2,block"
SecRule TX:flag "@eq 1" "id:13,phase:2,block"
SecRule TX:flag "@eq 0" "id:14,phase:2,block"
SecRule &TX:never_set "@eq 0" "id:15,phase:2,block"
SecRule REQBODY_PROCESSOR "@streq JSON" "id:16,phase:2,pass,nolog,skip:1"
SecAction "id:17,phase:2,pass,nolog,setvar:'tx.written_only=1'"
SecAction "id:18,phase:2,pass,nolog,setvar:'tx.blocking_inbound_anomaly_score=0'"
SecRule ARGS "@rx x" "id:19,phase:2,block,setvar:'tx.written_only=+1'"
`
	got := compiledIDs(dropDeadRules(splitCRS(file), u))
	// 10, 11: never set; 13: always 0; 16: no JSON processor; 17: nobody reads it.
	// 18 stays (949 reads the score), 19 stays (it blocks).
	if want := []int{12, 14, 15, 18, 19}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	// The chained rule of a dropped rule goes with it.
	for _, s := range dropDeadRules(splitCRS(file), u) {
		if strings.Contains(s.text, "%{tx.never_set}") {
			t.Fatal("a chained rule of a dropped rule is kept")
		}
	}
}

func TestMergeActions(t *testing.T) {
	file := `SecAction "id:1,phase:2,pass,nolog,setvar:'tx.a=0'"
# a comment
SecAction "id:2,phase:2,pass,nolog,setvar:'tx.a=+%{tx.b}'"
SecAction "id:3,phase:1,pass,nolog,setvar:'tx.c=1'"
SecRule ARGS "@rx x" "id:4,phase:2,block"
SecAction "id:5,phase:2,pass,nolog,setvar:'tx.d=1'"
SecMarker "END"
SecAction "id:6,phase:2,pass,nolog,setvar:'tx.e=1'"
`
	out := mergeActions(splitCRS(file))
	if got, want := compiledIDs(out), []int{1, 3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for _, s := range out {
		if s.id == 1 && !strings.Contains(s.text, "setvar:'tx.a=0',setvar:'tx.a=+%{tx.b}'") {
			t.Fatalf("merged action: %s", s.text)
		}
	}
	// A relative skip counts rules: nothing is merged in its file.
	withSkip := file + `SecRule ARGS "@rx y" "id:7,phase:2,pass,skip:1"` + "\n"
	if got := compiledIDs(mergeActions(splitCRS(withSkip))); len(got) != 7 {
		t.Fatalf("merged across a skip: %v", got)
	}
}

// 949's paranoia-level sums become actions at their level and below, and go above it.
func TestFoldParanoiaSums(t *testing.T) {
	file := `SecRule TX:BLOCKING_PARANOIA_LEVEL "@ge 1" "id:1,phase:2,pass,nolog,setvar:'tx.s=+%{tx.pl1}'"
SecRule TX:BLOCKING_PARANOIA_LEVEL "@ge 2" "id:2,phase:2,pass,nolog,setvar:'tx.s=+%{tx.pl2}'"
`
	out := foldParanoiaChecks(splitCRS(file), 1)
	if len(compiledIDs(out)) != 1 || !strings.HasPrefix(strings.TrimSpace(out[0].text), `SecAction "id:1,`) {
		t.Fatalf("folded: %+v", out)
	}
}
