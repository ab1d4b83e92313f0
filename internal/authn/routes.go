package authn

import (
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/shopmind/shopmind/internal/restapi"
)

// route is one REST binding of an RPC.
type route struct {
	method     string
	segments   []string // "*" matches one path segment (a {variable})
	fullMethod string
}

var (
	routesOnce sync.Once
	routes     []route
)

// RouteFor finds the RPC that serves an HTTP method and backend path (after the gateway's
// prefix strip), from the contract's google.api.http rules.
func RouteFor(method, path string) (fullMethod string, rule Rule, ok bool) {
	routesOnce.Do(loadRoutes)
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, r := range routes {
		if r.method != method || len(r.segments) != len(segs) {
			continue
		}
		match := true
		for i, s := range r.segments {
			if s != "*" && s != segs[i] {
				match = false
				break
			}
		}
		if match {
			return r.fullMethod, RuleFor(r.fullMethod), true
		}
	}
	return "", Rule{}, false
}

// IsAdminPath reports the spec's administrator paths: a path segment containing "-m".
func IsAdminPath(path string) bool {
	for _, s := range strings.Split(path, "/") {
		if strings.Contains(s, "-m") {
			return true
		}
	}
	return false
}

func loadRoutes() {
	add := func(rule *annotations.HttpRule, full string) {
		method, pattern, ok := restapi.HTTPPattern(rule)
		if !ok {
			return
		}
		segs := strings.Split(strings.Trim(pattern, "/"), "/")
		for i, s := range segs {
			if strings.HasPrefix(s, "{") {
				segs[i] = "*"
			}
		}
		routes = append(routes, route{method: method, segments: segs, fullMethod: full})
	}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "shopmind.") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			svc := fd.Services().Get(i)
			for j := 0; j < svc.Methods().Len(); j++ {
				m := svc.Methods().Get(j)
				rule, ok := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
				if !ok || rule == nil {
					continue
				}
				full := "/" + string(svc.FullName()) + "/" + string(m.Name())
				add(rule, full)
				for _, b := range rule.GetAdditionalBindings() {
					add(b, full)
				}
			}
		}
		return true
	})
}
