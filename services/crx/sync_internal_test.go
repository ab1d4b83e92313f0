package crx

import (
	"testing"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
)

// A platform shop id is unique per platform only: an item naming its platform gets that
// platform's shop, one without gets the only shop of that id or none when it is ambiguous.
func TestShopByPlatformID(t *testing.T) {
	tb := &basicv1.Shop{Id: 1, Platform: "taobao", PlatformShopId: "77"}
	jd := &basicv1.Shop{Id: 2, Platform: "jd", PlatformShopId: "77"}
	only := &basicv1.Shop{Id: 3, Platform: "jd", PlatformShopId: "88"}
	s := &shopSet{byPlatform: map[string][]*basicv1.Shop{"77": {tb, jd}, "88": {only}}}
	for _, c := range []struct {
		platform, id string
		want         *basicv1.Shop
		ambiguous    bool
	}{
		{"jd", "77", jd, false},
		{"taobao", "77", tb, false},
		{"", "77", nil, true},
		{"", "88", only, false},
		{"taobao", "88", nil, false},
		{"", "99", nil, false},
	} {
		got, amb := s.byPlatformID(c.platform, c.id)
		if got != c.want || amb != c.ambiguous {
			t.Errorf("%q/%q: %v %v, want %v %v", c.platform, c.id, got, amb, c.want, c.ambiguous)
		}
	}
}
