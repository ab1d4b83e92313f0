package restapi

import (
	"net/http"

	"google.golang.org/genproto/googleapis/api/annotations"
)

// HTTPPattern returns the HTTP method and the path template of a google.api.http rule
// (the rule itself, not its additional bindings). ok is false for a rule whose pattern is
// not one of GET, POST, PUT, DELETE and PATCH (none, or custom).
func HTTPPattern(rule *annotations.HttpRule) (method, path string, ok bool) {
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get, true
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post, true
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put, true
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete, true
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch, true
	}
	return "", "", false
}
