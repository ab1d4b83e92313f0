package app_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/gateway"
	genopenapi "github.com/shopmind/shopmind/gen/openapi"
)

// The operations the documents mark public (the contract's access rule) are exactly the
// routes the edge lets through without a token by default: a client reading the document
// is told the truth about which calls need one. (Public routes serving files, not operations,
// are gateway.PublicFiles.)
func TestDocumentedPublicOperationsAreTheEdgesPublicRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Access   string `json:"x-shopmind-access"`
			Security []any  `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(genopenapi.V2, &doc); err != nil {
		t.Fatal(err)
	}
	var public []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if op.Access == "public" {
				if op.Security == nil || len(op.Security) != 0 {
					t.Errorf("%s %s is public but does not clear the bearer requirement (security: [])", method, path)
				}
				public = append(public, strings.ToUpper(method)+" "+path)
			}
		}
	}
	edge := slices.DeleteFunc(slices.Clone(gateway.DefaultPublicRoutes), func(r string) bool { return slices.Contains(gateway.PublicFiles, r) })
	slices.Sort(public)
	slices.Sort(edge)
	if !slices.Equal(public, edge) {
		t.Errorf("public in the documents: %v\npublic at the edge (gateway.DefaultPublicRoutes): %v", public, edge)
	}
}
