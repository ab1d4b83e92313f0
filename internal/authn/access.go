package authn

import (
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	commonv1 "github.com/shopmind/shopmind/gen/go/shopmind/common/v1"
)

// Rule is an RPC's declared access rule (the (shopmind.common.v1.access) option).
type Rule struct {
	Public     bool
	Permission string
	Admin      bool
	// Operator: platform operators only (implies Admin); see OperatorSource.
	Operator bool
}

var (
	rulesOnce sync.Once
	rules     map[string]Rule
)

// RuleFor returns the access rule of a gRPC full method name (/pkg.Service/Method). Methods
// outside ShopMind's contract (health, reflection) are public; a ShopMind method without a
// rule (the contract test forbids it) needs a signed-in caller.
func RuleFor(fullMethod string) Rule {
	rulesOnce.Do(loadRules)
	if r, ok := rules[fullMethod]; ok {
		return r
	}
	if strings.HasPrefix(fullMethod, "/shopmind.") {
		return Rule{}
	}
	return Rule{Public: true}
}

// Permissions lists every permission code the contract declares, for validating role grants.
func Permissions() map[string]bool {
	rulesOnce.Do(loadRules)
	out := map[string]bool{}
	for _, r := range rules {
		if r.Permission != "" {
			out[r.Permission] = true
		}
	}
	return out
}

func loadRules() {
	rules = map[string]Rule{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "shopmind.") {
			return true
		}
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			svc := svcs.Get(i)
			methods := svc.Methods()
			for j := 0; j < methods.Len(); j++ {
				m := methods.Get(j)
				rule := Rule{}
				if ar, ok := proto.GetExtension(m.Options(), commonv1.E_Access).(*commonv1.AccessRule); ok && ar != nil {
					rule = Rule{Public: ar.GetPublic(), Permission: ar.GetPermission(),
						Admin: ar.GetAdmin() || ar.GetOperator(), Operator: ar.GetOperator()}
				}
				rules["/"+string(svc.FullName())+"/"+string(m.Name())] = rule
			}
		}
		return true
	})
}
