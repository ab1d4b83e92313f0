package crs

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoregistry"
)

// The paranoia-level-2 exclusions derived from the contract's text_kind options are the list
// that was kept by hand in gateway/waf.go, but for fields the list meant and the contract
// names otherwise, and for the names of the spec's request examples that no field of the
// contract has (specOnly: requests naming them are refused by the backends, 400, so they
// need no exclusion).
func TestLevel1OnlyFromTheContract(t *testing.T) {
	handKept := []string{
		// free text
		"json.message", "json.content", "json.name", "json.display_name", "json.description",
		"json.metric.display_name", "json.metric.description", "json.formula.expression",
		"json.keyword", "keyword", "json.password", "json.page_title", "json.page_url", "json.stack",
		`/^json\.items\.[0-9]+\.page_url$/`, `/^json\.items\.[0-9]+\.page_title$/`, "json.current_user.username",
		"json.url", "json.user_agent", "json.current_page_info.url", "json.current_page_info.title",
		`/^json\.images\.[0-9]+$/`,
		`/^json\.data\./`,
		// constrained to field names
		"sort", "json.sort", "json.update_mask",
	}
	// Free text the contract gained after the list was kept by hand: the passwords and the
	// display name of administration (services/tenant/ADMIN.md); a goods' title and image
	// URL as the contract sends them (CreateGoods, UpdateGoods: the hand-kept list named the
	// spec example's top-level name and images, and a merchant's title such as
	// `Boots & Socks (2-pack); S/M/L` was blocked at level 2).
	added := []string{"json.admin_password", "json.current_password", "json.new_password", "json.nickname",
		"json.goods.image_url", "json.goods.name",
		// the extension's URL patterns (TEXT_KIND_URL, which is also level-1-only)
		`/^json\.metrics\.[0-9]+\.api_url_pattern$/`, `/^json\.metrics\.[0-9]+\.url_pattern$/`}
	handKeptNames := []string{`/^json\.current_user\./`}
	// The contract's own names of fields the list meant: a formula's expression is
	// json.config.formula.expression (CreateMetric) and json.metric.config.formula.expression
	// (UpdateMetric); current_page_info is a free-form Struct, so every value beneath it, as
	// for the extension's data, not only url and title.
	replaced := map[string][]string{
		"json.formula.expression":      {"json.config.formula.expression", "json.metric.config.formula.expression"},
		"json.current_page_info.url":   {`/^json\.current_page_info\./`},
		"json.current_page_info.title": {`/^json\.current_page_info\./`},
	}
	specOnly := []string{"json.content", `/^json\.images\.[0-9]+$/`, `/^json\.items\.[0-9]+\.page_title$/`}
	var want []string
	for _, a := range handKept {
		if r, ok := replaced[a]; ok {
			want = append(want, r...)
		} else if !slices.Contains(specOnly, a) {
			want = append(want, a)
		}
	}
	want = append(want, added...)
	slices.Sort(want)
	want = slices.Compact(want)
	got := contractLevel1Only()
	if !slices.Equal(got.values, want) {
		t.Errorf("values:\n got %q\nwant %q", got.values, want)
	}
	// URLs stored, never fetched: no RFI or SSRF rule (TestWAFPassesIntranetURLs).
	wantURLs := []string{`/^json\.data\./`, `/^json\.items\.[0-9]+\.page_url$/`, `/^json\.metrics\.[0-9]+\.api_url_pattern$/`,
		`/^json\.metrics\.[0-9]+\.url_pattern$/`, "json.page_url", "json.url"}
	if !slices.Equal(got.urls, wantURLs) {
		t.Errorf("urls:\n got %q\nwant %q", got.urls, wantURLs)
	}
	if !slices.Equal(got.names, handKeptNames) {
		t.Errorf("names: got %q, want %q", got.names, handKeptNames)
	}
	for _, a := range append(slices.Clone(got.values), got.names...) {
		if strings.Contains(a, "|") { // it separates the targets of an exclusion
			t.Errorf("%q: a target name cannot hold |", a)
		}
	}
}

// Every file of the contract is linked into the package, so the exclusions read all of it
// whatever the binary hosts.
func TestContractFilesLinked(t *testing.T) {
	root := filepath.Join("..", "..", "..", "proto")
	n := 0
	err := filepath.WalkDir(filepath.Join(root, "shopmind"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".proto") {
			return err
		}
		n++
		rel, _ := filepath.Rel(root, path)
		if _, err := protoregistry.GlobalFiles.FindFileByPath(filepath.ToSlash(rel)); err != nil {
			t.Errorf("%s is not linked: add its package to exclusions.go's imports", rel)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("reading %s: %v (%d files)", root, err, n)
	}
}
